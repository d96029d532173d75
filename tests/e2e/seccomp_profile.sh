#!/bin/bash
# seccomp_profile.sh MINIVMM KERNEL INITRD TOOLS [NR_CPUS] [MINIVMM OPTIONS...]
#
# Developer tool, not a test: how the seccomp allow-lists of
# libvmm/core/sandbox.c were found and how to refresh them.  Boots the blk-mq
# payload (fio on a multi-queue disk, as tests/e2e/blk_mq.sh) under
# `strace -ff` with seccomp off and prints, per thread class, every system
# call the threads made after they were named (vmm-vcpuN, vmm-ioN,
# vmm-console; the port threads vmm-portN, vmm-portctl of minivmm-oci,
# which minivmm has none of) or, for the control thread, after its last
# clone() (i.e. after vmm_start() returned).  Run it in the rig:
#   tests/rig/rig-run -- tests/e2e/seccomp_profile.sh build/minivmm \
#       $(tests/rig/mkguest.sh) $(tests/rig/mktools.sh) 2
# At 32 vCPUs strace stopping at every KVM_RUN exit is too slow for the
# rig; leave ioctls out (they do not depend on the vCPU count) and keep
# seccomp on, so that what the threads do under their filters is seen:
#   SCPROF_STRACE_OPTS="--seccomp-bpf -e trace=!ioctl" SCPROF_NO_SECCOMP= \
#   RIG_PASS_ENV="SCPROF_STRACE_OPTS SCPROF_NO_SECCOMP" tests/rig/rig-run \
#       --timeout 2400 -- tests/e2e/seccomp_profile.sh build/minivmm \
#       $(tests/rig/mkguest.sh) $(tests/rig/mktools.sh) 32
# (glibc's lazy initialisation, which the library now does before a thread
# confines itself, shows up with --no-seccomp: libvmm/core/sandbox-warm.c.)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_require_kvm
command -v strace >/dev/null || e2e_fail "strace is not installed"

vmm=$1 kernel=$2 initrd=$3 tools=$4 n=${5:-2}
shift 4
[[ $# -gt 0 ]] && shift
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/scprof.XXXXXX")
trap 'rm -rf "$dir"' EXIT
img=$dir/data.img
# fio verify regions as in seccomp.sh: CPUs x mb MiB, plus the marker.
mb=$((n <= 4 ? 16 : (32 / n > 1 ? 32 / n : 1)))
size=$((n * mb + 32 > 96 ? n * mb + 32 : 96))
truncate -s "${size}M" "$img"
mkdir "$dir/st"

# shellcheck disable=SC2086 # SCPROF_STRACE_OPTS is a word list
E2E_VMM_TIMEOUT=${E2E_VMM_TIMEOUT:-1800} e2e_run_vmm "$dir/log" -- \
	strace -ff -qq ${SCPROF_STRACE_OPTS:-} -o "$dir/st/t" "$vmm" ${SCPROF_NO_SECCOMP---no-seccomp} \
	--smp "$n" --mem 1G \
	--kernel "$kernel" --initrd "$initrd" --disk "path=$img,serial=data" \
	--disk "path=$tools,ro=on,serial=tools" --stats "$@" \
	--append "quiet guest.run=blk-mq guest.queues=$n guest.token=1 guest.runtime=1 guest.verify_mb=$mb"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "guest payload failed"

# Per file (one per thread): its class and the calls after the naming point
# (with seccomp on: after the thread installed its filter).
for f in "$dir"/st/t.*; do
	name=$(sed -n 's/.*prctl(PR_SET_NAME, "\([^"]*\)").*/\1/p' "$f" | head -1)
	if [[ -n "$name" ]]; then
		class=${name%%[0-9]*}
		from=$(grep -n -m1 'prctl(PR_SET_NAME' "$f" | cut -d: -f1)
	else
		class=control
		from=$(grep -n '^clone' "$f" | tail -1 | cut -d: -f1)
	fi
	confined=$(grep -n -m1 '^seccomp(SECCOMP_SET_MODE_FILTER' "$f" | cut -d: -f1)
	[[ -n "$confined" ]] && from=$((confined + 1))
	sed -n "${from:-1},\$p" "$f" | sed -n 's/^\([a-z_0-9]*\)(\(.*\)/\1 \2/p' |
		awk -v c="$class" '{ s = $1; if (s == "ioctl") { r = $3; sub(/,$/, "", r); s = s ":" r } print c, s }'
done | sort | uniq -c | sort -k2,2 -k1,1nr >"$dir/summary"
for class in vmm-vcpu vmm-io vmm-console vmm-port vmm-portctl control; do
	echo "== $class: $(awk -v c="$class" '$2 == c { print $3 }' "$dir/summary" | sort -u | wc -l) distinct calls"
	awk -v c="$class" '$2 == c { $2 = ""; print }' "$dir/summary"
done
