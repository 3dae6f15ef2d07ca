// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The wait and flush hooks as fentry/fexit on the syscalls' own functions,
 * where the kernel allows it: a syscall tracepoint, once any program is on
 * one, sends every syscall of every task through the kernel's slow path
 * (+153 ns a syscall measured on 6.18); a trampoline on a function costs
 * only the calls of that function. The bodies are the tracepoints' own
 * (wait.bpf.h, flush.bpf.h). Loaded instead of loop.bpf.c's and flush.bpf.c's
 * tracepoint programs when userspace/kernel/features.c finds fentry works.
 *
 * The targets are the syscalls' entry points (__x64_sys_*), not the helpers
 * under them (do_epoll_wait, do_sys_poll, core_sys_select): their arguments
 * and return values are the syscall's own, as the tracepoints see them, the
 * "restart the call" codes included, and they are never inlined. The
 * tracepoints' table of syscall numbers (which call) is a program per call
 * here: a trampoline program is bound to its function when it is loaded.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "wait.bpf.h"
#include "flush.bpf.h"

/*
 * The entry point's pt_regs is a trusted pointer: on x86 its fields are read
 * by plain loads, not bpf_probe_read_kernel() calls (PT_REGS_PARM*_SYSCALL)
 */
#if defined(__TARGET_ARCH_x86)
#define SYS(name) "__x64_sys_" #name
#define REGS_NR(regs) ((__s32)(regs)->orig_ax)
#elif defined(__TARGET_ARCH_arm64)
#define SYS(name) "__arm64_sys_" #name
#define REGS_NR(regs) ((__s32)BPF_CORE_READ(regs, syscallno))
#else
#error "fentry hooks: no syscall entry point names for this architecture"
#endif

/* a syscall's arguments and user stack pointer as its entry point got them */
#define WAIT_ENTER(name, kind)							\
SEC("fentry/" SYS(name))							\
int BPF_PROG(fe_##name, struct pt_regs *regs)					\
{										\
	__u64 args[4] = { PT_REGS_PARM1_SYSCALL(regs), PT_REGS_PARM2_SYSCALL(regs),	\
			  PT_REGS_PARM3_SYSCALL(regs),				\
			  kind == LW_CALL_SELECT ? PT_REGS_PARM4_SYSCALL(regs) : 0 };	\
										\
	return wait__enter(bpf_get_current_task_btf(), kind, REGS_NR(regs), args,	\
			   PT_REGS_SP(regs));					\
}

#define WAIT_EXIT(name)								\
SEC("fexit/" SYS(name))								\
int BPF_PROG(fx_##name, struct pt_regs *regs, long ret)				\
{										\
	return wait__exit(bpf_get_current_task_btf(), false, REGS_NR(regs), ret);	\
}

#define FLUSH(name)								\
SEC("fentry/" SYS(name))							\
int BPF_PROG(fe_##name, struct pt_regs *regs)					\
{										\
	return flush__enter(REGS_NR(regs));					\
}										\
SEC("fexit/" SYS(name))								\
int BPF_PROG(fx_##name, struct pt_regs *regs, long ret)				\
{										\
	return flush__exit();							\
}

WAIT_ENTER(epoll_wait, LW_CALL_EPOLL)
WAIT_ENTER(epoll_pwait, LW_CALL_EPOLL)
WAIT_ENTER(epoll_pwait2, LW_CALL_EPOLL)
WAIT_ENTER(poll, LW_CALL_POLL)
WAIT_ENTER(ppoll, LW_CALL_POLL)
WAIT_ENTER(select, LW_CALL_SELECT)
WAIT_ENTER(pselect6, LW_CALL_SELECT)

WAIT_EXIT(epoll_wait)
WAIT_EXIT(epoll_pwait)
WAIT_EXIT(epoll_pwait2)
WAIT_EXIT(poll)
WAIT_EXIT(ppoll)
WAIT_EXIT(select)
WAIT_EXIT(pselect6)

/*
 * restart_syscall has no pt_regs entry point of its own in BTF (it takes no
 * argument): its body's function. A poll/select resumed after a stop ends
 * there.
 */
SEC("fexit/__do_sys_restart_syscall")
int BPF_PROG(fx_restart_syscall, long ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	return wait__exit(task, true, regs ? (__s32)BPF_CORE_READ(regs, orig_ax) : -1, ret);
}

FLUSH(fsync)
FLUSH(fdatasync)
FLUSH(sync_file_range)
FLUSH(syncfs)
