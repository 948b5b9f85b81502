package sandbox

import (
	"encoding/binary"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"syscall"
)

// The seccomp filter is a classic BPF program (struct sock_filter, as
// bwrap's --seccomp reads it): allow everything but the calls an agent never
// needs and a sandbox escape or a host attack would. Denied calls fail with
// EPERM; clone3 fails with ENOSYS so the C library falls back to clone,
// whose flags the filter can inspect (no new namespaces).

const (
	bpfLD   = 0x00
	bpfJMP  = 0x05
	bpfRET  = 0x06
	bpfW    = 0x00
	bpfABS  = 0x20
	bpfJEQ  = 0x10
	bpfJGE  = 0x30
	bpfJSET = 0x40
	bpfK    = 0x00

	seccompRetKillProcess = 0x80000000
	seccompRetErrno       = 0x00050000
	seccompRetAllow       = 0x7fff0000

	offNr   = 0 // struct seccomp_data: int nr
	offArch = 4 // __u32 arch
	offArg0 = 16

	// The namespace flags of clone(2).
	cloneNewFlags = syscall.CLONE_NEWNS | syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID |
		syscall.CLONE_NEWNET | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC | syscall.CLONE_NEWCGROUP
)

type insn struct {
	code   uint16
	jt, jf uint8
	k      uint32
}

// syscallTable is one architecture's audit arch and the numbers the filter
// names.
type syscallTable struct {
	arch   uint32
	denied map[string]uint32
	clone  uint32
	clone3 uint32
	x32    bool // numbers with bit 30 set are the x32 ABI: denied
}

var tables = map[string]syscallTable{
	"amd64": {arch: 0xc000003e, clone: 56, clone3: 435, x32: true, denied: map[string]uint32{
		"ptrace": 101, "mount": 165, "umount2": 166, "unshare": 272, "setns": 308,
		"keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298,
		"kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
		"delete_module": 176, "reboot": 169, "swapon": 167, "swapoff": 168, "pivot_root": 155,
		"chroot": 161, "process_vm_readv": 310, "process_vm_writev": 311,
		"open_by_handle_at": 304, "name_to_handle_at": 303, "userfaultfd": 323,
		"open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
		"fspick": 433, "mount_setattr": 442, "acct": 163, "settimeofday": 164,
		"clock_settime": 227, "iopl": 172, "ioperm": 173, "quotactl": 179, "vhangup": 153,
		"personality": 135}},
	"arm64": {arch: 0xc00000b7, clone: 220, clone3: 435, denied: map[string]uint32{
		"ptrace": 117, "mount": 40, "umount2": 39, "unshare": 97, "setns": 268,
		"keyctl": 219, "add_key": 217, "request_key": 218, "bpf": 280, "perf_event_open": 241,
		"kexec_load": 104, "kexec_file_load": 294, "init_module": 105, "finit_module": 273,
		"delete_module": 106, "reboot": 142, "swapon": 224, "swapoff": 225, "pivot_root": 41,
		"chroot": 51, "process_vm_readv": 270, "process_vm_writev": 271,
		"open_by_handle_at": 265, "name_to_handle_at": 264, "userfaultfd": 282,
		"open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
		"fspick": 433, "mount_setattr": 442, "acct": 89, "settimeofday": 170,
		"clock_settime": 112, "quotactl": 60, "vhangup": 58, "personality": 92}},
}

// DeniedSyscalls lists the calls the filter refuses on this architecture
// (clone with namespace flags and clone3 besides).
func DeniedSyscalls() []string {
	return slices.Sorted(maps.Keys(tables[runtime.GOARCH].denied))
}

// seccompProgram returns the filter for goarch as bwrap reads it.
func seccompProgram(goarch string) ([]byte, error) {
	t, ok := tables[goarch]
	if !ok {
		return nil, fmt.Errorf("seccomp: no syscall table for %s", goarch)
	}
	eperm := seccompRetErrno | uint32(syscall.EPERM)
	enosys := seccompRetErrno | uint32(syscall.ENOSYS)
	p := []insn{
		{code: bpfLD | bpfW | bpfABS, k: offArch},
		{code: bpfJMP | bpfJEQ | bpfK, jt: 1, k: t.arch},
		{code: bpfRET | bpfK, k: seccompRetKillProcess}, // another ABI: no way around the filter
		{code: bpfLD | bpfW | bpfABS, k: offNr},
	}
	if t.x32 {
		p = append(p, insn{code: bpfJMP | bpfJGE | bpfK, jf: 1, k: 0x40000000}, insn{code: bpfRET | bpfK, k: eperm})
	}
	for _, nr := range slices.Sorted(maps.Values(t.denied)) {
		p = append(p, insn{code: bpfJMP | bpfJEQ | bpfK, jf: 1, k: nr}, insn{code: bpfRET | bpfK, k: eperm})
	}
	p = append(p,
		insn{code: bpfJMP | bpfJEQ | bpfK, jf: 1, k: t.clone3},
		insn{code: bpfRET | bpfK, k: enosys},
		// clone: arg0 holds the flags on both architectures; low 32 bits.
		insn{code: bpfJMP | bpfJEQ | bpfK, jf: 4, k: t.clone},
		insn{code: bpfLD | bpfW | bpfABS, k: offArg0},
		insn{code: bpfJMP | bpfJSET | bpfK, jf: 1, k: cloneNewFlags},
		insn{code: bpfRET | bpfK, k: eperm},
		insn{code: bpfRET | bpfK, k: seccompRetAllow},
		insn{code: bpfRET | bpfK, k: seccompRetAllow},
	)
	out := make([]byte, 0, 8*len(p))
	for _, in := range p {
		out = binary.NativeEndian.AppendUint16(out, in.code)
		out = append(out, in.jt, in.jf)
		out = binary.NativeEndian.AppendUint32(out, in.k)
	}
	return out, nil
}
