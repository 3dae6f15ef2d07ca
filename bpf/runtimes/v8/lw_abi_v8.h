/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What crosses between the BPF V8 walker (v8.bpf.h) and userspace
 * (userspace/runtimes/v8/): the per-process layout userspace reads from the
 * node binary's v8dbg_* symbols and code, and the raw JS frames BPF leaves
 * for userspace to name. Every V8 version difference the walker needs is a
 * number here, so the BPF code has no per-version branches. Both sides
 * include this file.
 */
#ifndef LW_ABI_V8_H
#define LW_ABI_V8_H

#define LW_V8_MAX_DEPTH 32	/* V8 frames walked per stack (JS and typed) */
#define LW_V8_MAX_STACKS 2048
#define LW_V8_MAX_PROCS 1024
/*
 * Bytes of a frame read at once, from fp - LW_V8_WIN_BELOW: the marker or
 * context (fp-8), function (fp-16), bytecode array (fp-32) and offset
 * (fp-40) of standard frames, an entry frame's saved c_entry_fp (fp-64),
 * the caller's fp and pc (fp, fp+8) and a builtin exit frame's target (fp+24).
 */
#define LW_V8_WIN_BELOW 64
#define LW_V8_WIN_ABOVE 48
#define LW_V8_WIN (LW_V8_WIN_BELOW + LW_V8_WIN_ABOVE)
#define LW_V8_OBJ_READ 64	/* bytes of a JSFunction / SharedFunctionInfo head */
#define LW_V8_NO_OFF 0xffff	/* a window or object offset the binary does not have */
/* glibc keeps the first 32 pthread keys inline, then blocks of 32 */
#define LW_V8_KEYS_INLINE 32
#define LW_V8_MAX_KEY 1024

/* struct lw_v8_proc.flags */
enum lw_v8_proc_flags {
	LW_V8_P_UNSUPPORTED = 1 << 0,	/* node, but no usable metadata: stacks are markers */
	LW_V8_P_TLS_ISOLATE = 1 << 1,	/* isolate = *(fsbase + tls_isolate) (node 20+) */
	LW_V8_P_PTHREAD_KEY = 1 << 2,	/* isolate = pthread_getspecific(key) (node 18) */
	LW_V8_P_TLS_DTV = 1 << 3,	/* isolate = *(dtv[tls_module] + tls_isolate) (libnode.so) */
};

/*
 * One node process, keyed by pid in "v8_procs". fp_* are byte offsets into
 * the frame window (fp + x - LW_V8_WIN_BELOW); iso_* from the Isolate; the
 * others from the start of the object named.
 */
struct lw_v8_proc {
	__s64 tls_isolate;	/* g_current_isolate_ relative to the thread pointer, or its block */
	__u32 flags;		/* enum lw_v8_proc_flags */
	__u32 pthread_key;	/* Isolate::isolate_key_ */
	__u32 tls_inline;	/* glibc struct pthread: specific_1stblock[32] of {seq, data} */
	__u32 tls_blocks;	/* specific[32], pointers to further blocks */
	__u32 iso_c_entry_fp;	/* ThreadLocalTop::c_entry_fp_: the innermost exit frame */
	__u32 iso_fast_c_fp;	/* IsolateData::fast_c_call_caller_fp_ (0: none) */
	__u32 iso_fast_c_pc;	/* IsolateData::fast_c_call_caller_pc_ */
	__u32 fp_marker;	/* v8dbg_off_fp_context_or_frame_type (-8) */
	__u32 fp_function;	/* v8dbg_off_fp_function (-16) */
	__u32 fp_bytecode_array;	/* v8dbg_off_fp_bytecode_array (-32) */
	__u32 fp_bytecode_offset;	/* v8dbg_off_fp_bytecode_offset (-40) */
	__u32 fp_entry_next;	/* entry frame: the saved outer c_entry_fp (-64) */
	__u32 fp_exit_target;	/* builtin exit frame: the target JSFunction (+24) */
	__u32 jsfunc_shared;	/* JSFunction::shared */
	__u32 sfi_name;		/* SharedFunctionInfo::name_or_scope_info */
	__u32 sfi_script;	/* SharedFunctionInfo::script */
	__u32 sfi_ints;		/* SharedFunctionInfo::length, parameter count... */
	/* StackFrame::Type markers (v8dbg_frametype_*) */
	__u32 ft_entry;
	__u32 ft_construct_entry;
	__u32 ft_builtin_exit;
	__u32 tls_module;	/* the library's TLS module id (glibc's dtv index) */
	/* where V8 code runs: pcs anywhere else are native */
	__u64 blob_lo, blob_hi;	/* embedded builtins as loaded with the binary */
	__u64 code_lo, code_hi;	/* the code range: JIT code and the remapped builtins */
};

/* struct lw_v8_frame.flags */
enum lw_v8_frame_flags {
	LW_V8_F_BUILTIN_EXIT = 1 << 0,	/* a C++ builtin's exit frame: func is its target */
	LW_V8_F_TOP = 1 << 1,		/* pc is the sampled ip, not a return address */
	LW_V8_F_HEADS = 1 << 2,		/* sfi and its head words were read */
	LW_V8_F_BC_SMI = 1 << 3,	/* the bytecode offset slot holds a Smi: interpreted */
};

/*
 * One frame as BPF saw it: tagged pointers as read, plus words of the SFI's
 * head at capture, which userspace compares with the SFI it finds at that
 * address when it names the frame (a GC may have moved it since). The name
 * word changes when a GC moves the function's ScopeInfo; its script and
 * its length, parameter count and token offset do not.
 */
struct lw_v8_frame {
	__u64 pc;		/* the frame's pc: the sampled ip or its callee's return address */
	__u64 func;		/* tagged JSFunction (fp-16, or a builtin exit frame's target) */
	__u64 sfi;		/* JSFunction::shared at capture */
	__u64 sfi_map;		/* the SFI's map word at capture */
	__u64 sfi_name;		/* SharedFunctionInfo::name_or_scope_info at capture */
	__u64 sfi_script;	/* SharedFunctionInfo::script at capture */
	__u64 sfi_ints;		/* the word at SharedFunctionInfo::length at capture */
	__u64 bytecode_array;	/* fp-32 word (a BytecodeArray in unoptimised frames) */
	__u64 bytecode_offset;	/* fp-40 word (a Smi in interpreted frames) */
	__u32 flags;		/* enum lw_v8_frame_flags */
	__u32 pad;
};

/* struct lw_v8_stack.flags */
enum lw_v8_stack_flags {
	LW_V8_S_UNSUPPORTED = 1 << 0,	/* the process's metadata is unusable: a marker */
	LW_V8_S_TRUNCATED = 1 << 1,	/* more than LW_V8_MAX_DEPTH V8 frames */
	LW_V8_S_READ_ERROR = 1 << 2,	/* a frame could not be read */
	LW_V8_S_BAD_FP = 1 << 3,	/* the fp chain left the stack or went down */
	LW_V8_S_IN_EXIT = 1 << 4,	/* C++ called from JS: walked from c_entry_fp */
	LW_V8_S_IN_FAST_C = 1 << 5,	/* a fast C call from JS: walked from its caller fp */
};

/* The JS frames of one capture in "v8_stacks", innermost first; identical stacks share an id. */
struct lw_v8_stack {
	__u32 nframes;
	__u32 flags;		/* enum lw_v8_stack_flags */
	__u64 hash;		/* of the frames: the id is taken from it */
	/*
	 * The word at sp when the sample hit V8 code: a frameless builtin's
	 * return address into the JS frame that called it (frames[0] has the
	 * builtin's pc then), else 0.
	 */
	__u64 top_ret;
	struct lw_v8_frame frames[LW_V8_MAX_DEPTH];
};

#endif /* LW_ABI_V8_H */
