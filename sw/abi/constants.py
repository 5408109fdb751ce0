"""Every Linux constant the kernel-side SME ABI model uses, by its Linux name.

Values are those of docs/abi.md, "Constants" (uapi ``sigcontext.h``, ``prctl.h``, ``elf.h``, ``ptrace.h``,
``sve_context.h``, ``hwcap.h``) plus the generic arm64 syscall, signal and errno numbers the
model needs. The values the architecture defines (SVCR bits, SME trap codes, the FPSR reset
value) are the ones of :mod:`zatile.sw.arch.constants`, under their Linux names. Nothing here is
computed from the engine: the engine-dependent values (supported vector lengths, HWCAPs) live
in :mod:`zatile.sw.abi.cpufeatures`.
"""

from __future__ import annotations

from zatile.sw.arch.constants import FPSR_RESET_ON_SM_CHANGE, SVCR_SM, SVCR_ZA, Smtc

# ---------------------------------------------- signal-frame magics (docs/abi.md, "Signal records")
FPSIMD_MAGIC = 0x46508001
ESR_MAGIC = 0x45535201
EXTRA_MAGIC = 0x45585401
SVE_MAGIC = 0x53564501
TPIDR2_MAGIC = 0x54504902
ZA_MAGIC = 0x54366345
ZT_MAGIC = 0x5A544E01
FPMR_MAGIC = 0x46504D52
POE_MAGIC = 0x504F4530
GCS_MAGIC = 0x47435300
SVE_SIG_FLAG_SM = 0x1

#: ``round_up(sizeof(struct _aarch64_ctx), 16)``: the space a terminator record occupies.
TERMINATOR_SIZE = 16
#: ``round_up(sizeof(struct extra_context), 16)``.
EXTRA_CONTEXT_SIZE = 32
#: Largest signal frame the kernel builds or accepts (``SIGFRAME_MAXSZ``, 256 KiB).
SIGFRAME_MAXSZ = 256 * 1024

# --------------------------------------------------------------------- prctl (docs/abi.md, "prctl")
PR_SVE_SET_VL = 50
PR_SVE_GET_VL = 51
PR_SME_SET_VL = 63
PR_SME_GET_VL = 64
# Virtual ZA contexts: prctl options of zatile's own, not Linux's (docs/abi.md, "Virtual ZA
# contexts"); "ZA" in the high half keeps them clear of Linux's numbers (which end below 100).
PR_ZATILE_ZA_OPEN = 0x5A41_0001
PR_ZATILE_ZA_SELECT = 0x5A41_0002
PR_ZATILE_ZA_CLOSE = 0x5A41_0003
#: The most virtual ZA contexts a thread may have open besides its own (then -ENOSPC).
ZA_CONTEXTS_PER_THREAD = 64
PR_SME_VL_LEN_MASK = 0xFFFF
PR_SME_VL_INHERIT = 1 << 17
PR_SME_SET_VL_ONEXEC = 1 << 18
# The kernel handles SME requests with the PR_SVE_* flag macros; the values are identical.
PR_SVE_VL_LEN_MASK = PR_SME_VL_LEN_MASK
PR_SVE_VL_INHERIT = PR_SME_VL_INHERIT
PR_SVE_SET_VL_ONEXEC = PR_SME_SET_VL_ONEXEC

# ------------------------------------------- ELF notes and regsets (docs/abi.md, "Regset geometry")
NT_PRSTATUS = 1
NT_PRFPREG = 2
NT_PRPSINFO = 3
NT_AUXV = 6
NT_SIGINFO = 0x53494749
NT_FILE = 0x46494C45
NT_ARM_TLS = 0x401
NT_ARM_SVE = 0x405
NT_ARM_SSVE = 0x40B
NT_ARM_ZA = 0x40C
NT_ARM_ZT = 0x40D
NT_ARM_FPMR = 0x40E
NT_ARM_POE = 0x40F
NT_ARM_GCS = 0x410

# ---------------------------------------------- ptrace header flags (docs/abi.md, "ptrace headers")
SVE_PT_REGS_MASK = 1 << 0
SVE_PT_REGS_FPSIMD = 0
SVE_PT_REGS_SVE = SVE_PT_REGS_MASK
SVE_PT_VL_INHERIT = PR_SVE_VL_INHERIT >> 16
SVE_PT_VL_ONEXEC = PR_SVE_SET_VL_ONEXEC >> 16
ZA_PT_VL_INHERIT = PR_SME_VL_INHERIT >> 16
ZA_PT_VL_ONEXEC = PR_SME_SET_VL_ONEXEC >> 16

# ----------------------------------------------- vector-length constants (docs/abi.md, "Constants")
SVE_VQ_BYTES = 16
SVE_VQ_MIN = 1
SVE_VQ_MAX = 512
SVE_VL_MIN = SVE_VQ_MIN * SVE_VQ_BYTES
SVE_VL_MAX = SVE_VQ_MAX * SVE_VQ_BYTES
SVE_NUM_ZREGS = 32
SVE_NUM_PREGS = 16
#: Kernel-internal clamp applied by prctl and ptrace before rounding (bytes).
VL_ARCH_MAX = 0x100
#: ``(SMCR_ELx_LEN_MASK >> shift) + 1``: sizes the NT_ARM_SSVE and NT_ARM_ZA regsets.
SME_VQ_MAX = 16
ARCH_SVE_VQ_MAX = 16

# -------------------------------------------------------------- HWCAP2 bits (docs/abi.md, "HWCAPs")
AT_HWCAP = 16
AT_HWCAP2 = 26
AT_MINSIGSTKSZ = 51
AT_NULL = 0
HWCAP2_SME = 1 << 23
HWCAP2_SME_I16I64 = 1 << 24
HWCAP2_SME_F64F64 = 1 << 25
HWCAP2_SME_I8I32 = 1 << 26
HWCAP2_SME_F16F32 = 1 << 27
HWCAP2_SME_B16F32 = 1 << 28
HWCAP2_SME_F32F32 = 1 << 29
HWCAP2_SME_FA64 = 1 << 30
HWCAP2_SME2 = 1 << 37
HWCAP2_SME2P1 = 1 << 38
HWCAP2_SME_I16I32 = 1 << 39
HWCAP2_SME_BI32I32 = 1 << 40
HWCAP2_SME_B16B16 = 1 << 41
HWCAP2_SME_F16F16 = 1 << 42
HWCAP2_FPMR = 1 << 48
HWCAP2_SME_LUTV2 = 1 << 57
HWCAP2_SME_F8F16 = 1 << 58
HWCAP2_SME_F8F32 = 1 << 59
HWCAP2_SME_SF8FMA = 1 << 60
HWCAP2_SME_SF8DP4 = 1 << 61
HWCAP2_SME_SF8DP2 = 1 << 62
HWCAP2_POE = 1 << 63

# ------------------------------------- system registers and traps (docs/abi.md, "SME access traps")
SVCR_SM_MASK = SVCR_SM
SVCR_ZA_MASK = SVCR_ZA
ESR_ELX_EC_SHIFT = 26
ESR_ELX_IL = 1 << 25
ESR_ELX_EC_DABT_LOW = 0x24
ESR_ELX_EC_SME = 0x1D
ESR_ELX_WNR = 1 << 6
#: Data-fault status code "translation fault, level 0" the model reports for unmapped addresses.
ESR_ELX_FSC_FAULT_L0 = 0x04
ESR_ELX_SME_ISS_SMTC_SME_DISABLED = int(Smtc.SME_DISABLED)
ESR_ELX_SME_ISS_SMTC_ILL = int(Smtc.ILLEGAL_IN_STREAMING)
ESR_ELX_SME_ISS_SMTC_SM_DISABLED = int(Smtc.NEEDS_STREAMING)
ESR_ELX_SME_ISS_SMTC_ZA_DISABLED = int(Smtc.ZA_INACTIVE)
#: FPSR after ResetSVEState (hardware SMSTART/SMSTOP of SM) and after ``task_smstop_sm``.
FPSR_AFTER_SMSTOP = FPSR_RESET_ON_SM_CHANGE

# ------------------------------------------------------------------- PSTATE (sigcontext)
PSR_MODE_EL0T = 0x0
PSR_MODE_MASK = 0xF
PSR_MODE32_BIT = 0x10
PSR_F_BIT = 0x40
PSR_I_BIT = 0x80
PSR_A_BIT = 0x100
PSR_D_BIT = 0x200
PSR_V_BIT = 1 << 28
PSR_C_BIT = 1 << 29
PSR_Z_BIT = 1 << 30
PSR_N_BIT = 1 << 31
#: Bits of a user PSTATE that ``valid_native_regs`` clears on sigreturn and ptrace.
SPSR_EL1_AARCH64_RES0_BITS = ((0xFFFFFFFF << 32) | (0b11 << 26) | (0b11 << 22)
                              | (0xFF << 13) | (1 << 5))

# ----------------------------------------------------------------- arm64 syscall numbers
NR_WRITE = 64
NR_EXIT = 93
NR_EXIT_GROUP = 94
NR_SET_TID_ADDRESS = 96
NR_FUTEX = 98
NR_NANOSLEEP = 101
NR_PTRACE = 117
NR_SCHED_GETAFFINITY = 123
NR_SCHED_YIELD = 124
NR_KILL = 129
NR_TKILL = 130
NR_TGKILL = 131
NR_SIGALTSTACK = 132
NR_RT_SIGACTION = 134
NR_RT_SIGPROCMASK = 135
NR_RT_SIGRETURN = 139
NR_PRCTL = 167
NR_GETPID = 172
NR_GETPPID = 173
NR_GETTID = 178
NR_CLONE = 220
NR_EXECVE = 221
NR_WAIT4 = 260

#: The arm64 system calls by number (the asm-generic table: 0-243 and 260-284; 244-259 are
#: reserved for architecture-specific calls, which arm64 has none of), for dispatch by name and
#: for warnings that name a call.
SYSCALLS = dict(enumerate("""
io_setup io_destroy io_submit io_cancel io_getevents setxattr lsetxattr fsetxattr getxattr
lgetxattr fgetxattr listxattr llistxattr flistxattr removexattr lremovexattr fremovexattr getcwd
lookup_dcookie eventfd2 epoll_create1 epoll_ctl epoll_pwait dup dup3 fcntl inotify_init1
inotify_add_watch inotify_rm_watch ioctl ioprio_set ioprio_get flock mknodat mkdirat unlinkat
symlinkat linkat renameat umount2 mount pivot_root nfsservctl statfs fstatfs truncate ftruncate
fallocate faccessat chdir fchdir chroot fchmod fchmodat fchownat fchown openat close vhangup pipe2
quotactl getdents64 lseek read write readv writev pread64 pwrite64 preadv pwritev sendfile
pselect6 ppoll signalfd4 vmsplice splice tee readlinkat newfstatat fstat sync fsync fdatasync
sync_file_range timerfd_create timerfd_settime timerfd_gettime utimensat acct capget capset
personality exit exit_group waitid set_tid_address unshare futex set_robust_list
get_robust_list nanosleep getitimer setitimer kexec_load init_module delete_module timer_create
timer_gettime timer_getoverrun timer_settime timer_delete clock_settime clock_gettime
clock_getres clock_nanosleep syslog ptrace sched_setparam sched_setscheduler sched_getscheduler
sched_getparam sched_setaffinity sched_getaffinity sched_yield sched_get_priority_max
sched_get_priority_min sched_rr_get_interval restart_syscall kill tkill tgkill sigaltstack
rt_sigsuspend rt_sigaction rt_sigprocmask rt_sigpending rt_sigtimedwait rt_sigqueueinfo
rt_sigreturn setpriority getpriority reboot setregid setgid setreuid setuid setresuid getresuid
setresgid getresgid setfsuid setfsgid times setpgid getpgid getsid setsid getgroups setgroups
uname sethostname setdomainname getrlimit setrlimit getrusage umask prctl getcpu gettimeofday
settimeofday adjtimex getpid getppid getuid geteuid getgid getegid gettid sysinfo mq_open
mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr msgget msgctl msgrcv msgsnd
semget semctl semtimedop semop shmget shmctl shmat shmdt socket socketpair bind listen accept
connect getsockname getpeername sendto recvfrom setsockopt getsockopt shutdown sendmsg recvmsg
readahead brk munmap mremap add_key request_key keyctl clone execve mmap fadvise64 swapon swapoff
mprotect msync mlock munlock mlockall munlockall mincore madvise remap_file_pages mbind
get_mempolicy set_mempolicy migrate_pages move_pages rt_tgsigqueueinfo perf_event_open accept4
recvmmsg""".split())) | dict(enumerate("""
wait4 prlimit64 fanotify_init fanotify_mark name_to_handle_at open_by_handle_at clock_adjtime
syncfs setns sendmmsg process_vm_readv process_vm_writev kcmp finit_module sched_setattr
sched_getattr renameat2 seccomp getrandom memfd_create bpf execveat userfaultfd membarrier
mlock2""".split(), 260))

# ------------------------------------------------------------------------------- errno
EPERM = 1
ENOENT = 2
ESRCH = 3
EINTR = 4
EIO = 5
E2BIG = 7
EBADF = 9
ECHILD = 10
EAGAIN = 11
EACCES = 13
EFAULT = 14
EBUSY = 16
ENOTDIR = 20
ENOMEM = 12
EINVAL = 22
ENOTTY = 25
ENOSPC = 28
ESPIPE = 29
ENAMETOOLONG = 36
ENOSYS = 38
ETIMEDOUT = 110

# ----------------------------------------------------------------------------- signals
SIGHUP = 1
SIGINT = 2
SIGQUIT = 3
SIGILL = 4
SIGTRAP = 5
SIGABRT = 6
SIGBUS = 7
SIGFPE = 8
SIGKILL = 9
SIGUSR1 = 10
SIGSEGV = 11
SIGUSR2 = 12
SIGPIPE = 13
SIGALRM = 14
SIGTERM = 15
SIGSTKFLT = 16
SIGCHLD = 17
SIGCONT = 18
SIGSTOP = 19
SIGTSTP = 20
SIGTTIN = 21
SIGTTOU = 22
SIGURG = 23
SIGXCPU = 24
SIGXFSZ = 25
SIGVTALRM = 26
SIGPROF = 27
SIGWINCH = 28
SIGIO = 29
SIGPWR = 30
SIGSYS = 31
#: Highest signal number (``_NSIG``); signals are 1.._NSIG.
NSIG = 64

SIG_DFL = 0
SIG_IGN = 1
SIG_BLOCK = 0
SIG_UNBLOCK = 1
SIG_SETMASK = 2

SA_SIGINFO = 0x00000004
SA_RESTORER = 0x04000000
SA_ONSTACK = 0x08000000
SA_RESTART = 0x10000000
SA_NODEFER = 0x40000000
SA_RESETHAND = 0x80000000

SS_DISABLE = 2
SS_ONSTACK = 1
SS_AUTODISARM = 1 << 31
#: arm64's MINSIGSTKSZ: the smallest alternate stack sigaltstack accepts.
MINSIGSTKSZ = 5120

SI_USER = 0
SI_KERNEL = 0x80
SI_TKILL = -6
ILL_ILLOPC = 1
TRAP_BRKPT = 1
SEGV_MAPERR = 1
SEGV_ACCERR = 2

# --------------------------------------------------------------------------- clone flags
CSIGNAL = 0x000000FF
CLONE_VM = 0x00000100
CLONE_FS = 0x00000200
CLONE_FILES = 0x00000400
CLONE_SIGHAND = 0x00000800
CLONE_VFORK = 0x00004000
CLONE_PARENT = 0x00008000
CLONE_THREAD = 0x00010000
CLONE_SYSVSEM = 0x00040000
CLONE_SETTLS = 0x00080000
CLONE_PARENT_SETTID = 0x00100000
CLONE_CHILD_CLEARTID = 0x00200000
CLONE_CHILD_SETTID = 0x01000000
#: musl passes it; Linux has ignored it since 2.6.
CLONE_DETACHED = 0x00400000

# ------------------------------------------------------------------------- futex and wait4
FUTEX_WAIT = 0
FUTEX_WAKE = 1
FUTEX_REQUEUE = 3
FUTEX_CMP_REQUEUE = 4
FUTEX_PRIVATE_FLAG = 128
FUTEX_CLOCK_REALTIME = 256
WNOHANG = 1

# ------------------------------------------------------------------------- ptrace requests
PTRACE_CONT = 7
PTRACE_ATTACH = 16
PTRACE_DETACH = 17
PTRACE_GETREGSET = 0x4204
PTRACE_SETREGSET = 0x4205

# ------------------------------------------------------------------------ ELF core files
ELFCLASS64 = 2
ELFDATA2LSB = 1
EV_CURRENT = 1
ELFOSABI_NONE = 0
ET_CORE = 4
EM_AARCH64 = 183
PT_LOAD = 1
PT_NOTE = 4
PF_X = 1
PF_W = 2
PF_R = 4
