// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A shared object that defines a function of every name in loopwatch's probe
 * catalog (userspace/tracker/catalog.c): mapped by a traced process, each
 * copy of it is a file whose every function loopwatch attaches a uprobe to.
 * The probe-storm test maps dozens of copies at once, then unmaps them.
 */
#define CATALOG_FN(name) \
	__attribute__((visibility("default"), noinline)) int name(void) { return __LINE__; }

CATALOG_FN(JSONToObj)
CATALOG_FN(PKCS5_PBKDF2_HMAC)
CATALOG_FN(_ZN2v88internal10JsonParserIhE9ParseJsonENS0_6HandleINS0_6ObjectEEE)
CATALOG_FN(_ZN2v88internal10JsonParserItE9ParseJsonENS0_6HandleINS0_6ObjectEEE)
CATALOG_FN(_pickle_dumps)
CATALOG_FN(_pickle_loads)
CATALOG_FN(_sre_SRE_Pattern_findall)
CATALOG_FN(_sre_SRE_Pattern_match)
CATALOG_FN(_sre_SRE_Pattern_search)
CATALOG_FN(_sre_SRE_Pattern_sub)
CATALOG_FN(bcrypt_hashpass)
CATALOG_FN(cJSON_ParseWithLengthOpts)
CATALOG_FN(cJSON_Print)
CATALOG_FN(cJSON_PrintBuffered)
CATALOG_FN(cJSON_PrintUnformatted)
CATALOG_FN(compress2)
CATALOG_FN(deflate)
CATALOG_FN(encoder_call)
CATALOG_FN(inflate)
CATALOG_FN(json_dump_callback)
CATALOG_FN(json_load_file)
CATALOG_FN(json_loadb)
CATALOG_FN(json_loadf)
CATALOG_FN(json_loadfd)
CATALOG_FN(json_loads)
CATALOG_FN(json_object_to_json_string_length)
CATALOG_FN(json_tokener_parse_ex)
CATALOG_FN(objToJSON)
CATALOG_FN(scanner_call)
CATALOG_FN(uncompress2)
CATALOG_FN(yajl_tree_parse)
