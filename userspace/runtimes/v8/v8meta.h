/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the V8 walker and namer need to know about one node binary, all from
 * the file: the v8dbg_* post-mortem constants of its dynamic symbol table
 * (4-byte ints in .data/.rodata, or 0 in .bss), fallbacks where a V8
 * version dropped one, and three facts only the machine code knows (where
 * the isolate keeps c_entry_fp and the fast C call records, the entry
 * frame's layout), parsed from Builtins_CEntry_*, Builtins_JSEntry and the
 * embedded builtins; the current isolate's TLS slot from PT_TLS.
 */
#ifndef LOOPWATCH_SYMBOLS_V8META_H
#define LOOPWATCH_SYMBOLS_V8META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_handle;

#define V8M_NO_TYPE 0xffff
#define V8M_NO_FRAMETYPE 0xffffffffu

struct v8_meta {
	uint32_t version[4];		/* V8 major.minor.build.patch */
	size_t ndbg;			/* v8dbg_* symbols found */
	char why[128];			/* v8meta__load's reason when it fails */

	/* frame layout, bytes from fp */
	int fp_function, fp_context, fp_bytecode_array, fp_bytecode_offset;
	int fp_entry_next;		/* entry frame: saved outer c_entry_fp (code) */
	int fp_exit_target;		/* builtin exit frame: target JSFunction */
	/* StackFrame::Type values (v8dbg_frametype_*) */
	uint32_t ft_entry, ft_construct_entry, ft_builtin_exit;

	/* instance types */
	uint16_t t_jsfunc_first, t_jsfunc_last, t_sfi, t_scope_info, t_script;
	uint16_t t_bytecode_array, t_code, t_istream, t_byte_array, t_trusted_byte_array;
	uint16_t first_nonstring;
	uint16_t str_repr_mask, str_enc_mask, str_one_byte;

	/* object fields, bytes from the untagged object start */
	uint32_t map_instance_type;
	uint32_t jsfunc_shared, jsfunc_code;
	uint32_t sfi_name_or_scope_info, sfi_script, sfi_length;
	uint32_t script_name, script_source;
	uint32_t string_length, seq_one_chars, seq_two_chars, cons_first, cons_second;
	uint32_t thin_actual, sliced_parent, sliced_offset, external_resource;
	uint32_t fixed_array_length, fixed_array_data;
	uint32_t bytecode_array_data, bytecode_array_spt, bytecode_array_length;
	uint32_t scopeinfo_first_vars, scopeinfo_ncontextlocals;
	uint32_t code_instruction_start, code_instruction_size, code_flags;
	uint32_t code_spt, code_deopt;	/* Code::source_position_table, deoptimization_data */
	uint32_t code_bc_offsets;	/* baseline Code: its bytecode offset table */
	uint32_t istream_header;	/* InstructionStream: instructions start this far in */
	uint32_t istream_code;		/* InstructionStream::code, the back pointer */
	bool code_inline;		/* V8 <= 11.2: instructions inside the Code object */
	uint32_t deopt_literals, deopt_inlining_positions;	/* DeoptimizationData indices */
	uint8_t *bytecode_sizes;	/* interpreter::Bytecodes::kBytecodeSizes[3][count] */
	uint32_t bytecode_count;
	uint32_t codekind_mask, codekind_shift, codekind_baseline, codekind_maglev;
	uint32_t codekind_turbofan;
	/*
	 * Source position tables (bytecode and Code) encode each entry's code
	 * offset delta as unsigned delta << 2 | is_breakable << 1 |
	 * is_statement (V8 14), not as a zigzag int whose sign is !is_statement.
	 */
	bool spt_breakable;

	/* the isolate, from the code */
	bool has_tls_isolate;
	int64_t tls_isolate_tpoff;	/* g_current_isolate_, thread pointer relative */
	uint64_t isolate_key_sym;	/* node <= 18: Isolate::isolate_key_ (a pthread key) */
	/*
	 * Or, in a shared library (libnode.so: general-dynamic TLS), the GOT
	 * pair {module id, offset} that v8::Isolate::GetCurrent() passes to
	 * __tls_get_addr; the loader writes the module id, read at attach.
	 */
	uint64_t tls_index_at;
	int root_bias;			/* r13 (kRootRegister) = isolate + root_bias */
	uint32_t iso_c_entry_fp, iso_fast_c_fp, iso_fast_c_pc;

	/* embedded builtins as linked */
	uint64_t blob_code, blob_size;
	/*
	 * Or, where their symbols are stripped (Debian's libnode.so), the
	 * globals V8 keeps the process's blob in (current_embedded_blob_code_
	 * and _size_, 8 and 4 bytes), read at attach; [1] the other pair, in
	 * case the compiler evaluated them the other way round.
	 */
	uint64_t blob_code_at[2], blob_size_at[2];
	uint64_t blob_file_off;		/* the blob's offset in the file */
	uint64_t base_vaddr;		/* link address of file offset 0: bias = start - it */
};

/* 0, or -ENOTSUP (no v8dbg_*, pointer compression, a required field missing: m->why) */
int v8meta__load(struct v8_meta *m, const struct elf_handle *h);
void v8meta__free(struct v8_meta *m);

#endif
