// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Each entry fires once per operation: measured on this machine with exact
 * call counts. Where functions nest (cJSON_Parse -> ParseWithOpts ->
 * ParseWithLengthOpts, jansson's json_dump* -> json_dump_callback, json-c's
 * to_json_string -> _ext -> _length) the innermost shared one is probed, so
 * every public entry point is counted once. Node: only V8's inner C++
 * functions; a uretprobe on Builtin_Json* crashes node when a GC walks the
 * return address the uretprobe replaced.
 */
#include "tracker/catalog.h"

const struct catalog_entry catalog[] = {
	{ "cpython", "_json.cpython-3*.so", "encoder_call", "_json.Encoder", "json.dumps", "encode" },
	{ "cpython", "_json.cpython-3*.so", "scanner_call", "_json.Scanner", "json.loads", "decode" },
	{ "cpython", "_pickle.cpython-3*.so", "_pickle_dumps", NULL, "pickle.dumps", "encode" },
	{ "cpython", "_pickle.cpython-3*.so", "_pickle_loads", NULL, "pickle.loads", "decode" },
	{ "cpython", "libpython3.*.so*", "_sre_SRE_Pattern_match", NULL, "re.match", "regex" },
	{ "cpython", "libpython3.*.so*", "_sre_SRE_Pattern_search", NULL, "re.search", "regex" },
	{ "cpython", "libpython3.*.so*", "_sre_SRE_Pattern_findall", NULL, "re.findall", "regex" },
	{ "cpython", "libpython3.*.so*", "_sre_SRE_Pattern_sub", NULL, "re.sub", "regex" },
	{ "ujson", "ujson.cpython-3*.so", "objToJSON", NULL, "ujson.dumps", "encode" },
	{ "ujson", "ujson.cpython-3*.so", "JSONToObj", NULL, "ujson.loads", "decode" },
	{ "node", "node",
	  "_ZN2v88internal13JsonStringifyEPNS0_7IsolateENS0_6HandleINS0_6ObjectEEES5_S5_", NULL,
	  "JSON.stringify", "encode" },
	{ "node", "node", "_ZN2v88internal10JsonParserIhE9ParseJsonENS0_6HandleINS0_6ObjectEEE",
	  NULL, "JSON.parse", "decode" },
	{ "node", "node", "_ZN2v88internal10JsonParserItE9ParseJsonENS0_6HandleINS0_6ObjectEEE",
	  NULL, "JSON.parse", "decode" },
	{ "json-c", "libjson-c.so*", "json_object_to_json_string_length", NULL,
	  "json-c to_json_string", "encode" },
	{ "json-c", "libjson-c.so*", "json_tokener_parse_ex", NULL, "json-c parse", "decode" },
	{ "jansson", "libjansson.so*", "json_dump_callback", NULL, "jansson dump", "encode" },
	{ "jansson", "libjansson.so*", "json_loads", NULL, "jansson load", "decode" },
	{ "jansson", "libjansson.so*", "json_loadb", NULL, "jansson load", "decode" },
	{ "jansson", "libjansson.so*", "json_loadf", NULL, "jansson load", "decode" },
	{ "jansson", "libjansson.so*", "json_loadfd", NULL, "jansson load", "decode" },
	{ "jansson", "libjansson.so*", "json_load_file", NULL, "jansson load", "decode" },
	{ "cJSON", "libcjson.so*", "cJSON_ParseWithLengthOpts", NULL, "cJSON parse", "decode" },
	{ "cJSON", "libcjson.so*", "cJSON_Print", NULL, "cJSON print", "encode" },
	{ "cJSON", "libcjson.so*", "cJSON_PrintUnformatted", NULL, "cJSON print", "encode" },
	{ "cJSON", "libcjson.so*", "cJSON_PrintBuffered", NULL, "cJSON print", "encode" },
	{ "yajl", "libyajl.so*", "yajl_tree_parse", NULL, "yajl parse", "decode" },
	{ "zlib", "libz.so*", "compress2", NULL, "zlib compress", "compress" },
	{ "zlib", "libz.so*", "uncompress2", NULL, "zlib uncompress", "decompress" },
	{ "zlib", "libz.so*", "deflate", NULL, "zlib deflate", "compress" },
	{ "zlib", "libz.so*", "inflate", NULL, "zlib inflate", "decompress" },
	{ "openssl", "libcrypto.so*", "PKCS5_PBKDF2_HMAC", NULL, "PBKDF2", "kdf" },
	{ "bcrypt", "_bcrypt.abi3.so", "bcrypt_hashpass", NULL, "bcrypt", "kdf" },
};

const size_t catalog_len = sizeof(catalog) / sizeof(catalog[0]);

const char *const catalog_dirs[] = {
	"/usr/lib/x86_64-linux-gnu",
	"/lib/x86_64-linux-gnu",
	"/usr/lib/python3.11/lib-dynload",
	"/usr/lib/python3/dist-packages",
	"/usr/lib/python3/dist-packages/bcrypt",
	"/usr/bin",
	"/usr/local/lib",
	"/usr/local/bin",
	NULL,
};
