#!/bin/bash
# bench/fs_rig.sh MINIVMM KERNEL INITRD TOOLS ROUNDS RUNTIME FSIZE FILES [CACHE]:
# inside the rig's L1 (bench/fs_bench.sh runs it through
# tests/e2e/in-rig.sh).  Three guests booted at once, 1 vCPU and 512 MiB
# each, running tests/guest/fs-bench on the same tree (fio.dat of FSIZE
# bytes, tree.tar: this checkout's libvmm/ include/ devices/):
#   mvfs   minivmm --fs tag=share,socket=S,queue-size=1024
#   qemu   QEMU 7.2 -device vhost-user-fs-pci,queue-size=1024 (memfd RAM,
#          share=on), -M pc, the same kernel, initrd and command line;
#          firmware qboot (SeaBIOS only makes the nested boot longer; it
#          is out of the picture once Linux runs); the tools disk with
#          file.locking=off (minivmm's guests hold it locked)
#   mvblk  minivmm --disk: an ext4 image (mkfs.ext4 -d) of the same tree
# Each virtio-fs guest has its own /usr/lib/qemu/virtiofsd (-o cache=CACHE,
# default auto; --thread-pool-size=0, as minivmm's own path= shares: see
# README "virtio-fs") on its own copy of the tree.  All guests use
# --mem-backend memfd / memfd RAM and read fio from the tools disk.
# Then ROUNDS rounds: for each workload (randread, randwrite, seqread,
# seqwrite, meta, untar) each guest in turn, the order rotated every round
# (mvfs qemu mvblk, qemu mvblk mvfs, ...); only the guest asked works, the
# others wait on their console.  Per phase the L1 reads the VM's KVM exits
# (debugfs) at the guest's BEGIN and END lines.  Prints BENCH-JSON records:
# "fs" per side, workload and round, "fs_machine", "fs_boot" per side,
# "fs_vmm_stats" (minivmm's --stats-json at exit), "fs_error" for a failed
# phase or guest (then exit 1).  Timings are reported, never asserted.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
vmm=$1 kernel=$2 initrd=$3 tools=$4
rounds=${5:-3} runtime=${6:-4} fsize=${7:-33554432} files=${8:-500} cache=${9:-auto}
bench_need_kvm
vfsd=/usr/lib/qemu/virtiofsd
[[ -x $vfsd ]] || bench_die "$vfsd missing (qemu-system-common)"
qemu=$(command -v qemu-system-x86_64) || bench_die "qemu-system-x86_64 missing"
sides=(mvfs qemu mvblk)
workloads=(randread randwrite seqread seqwrite meta untar)
dir=$(bench_scratch fsb)
declare -A pid vpid fin fout t_start
cleanup() {
	bench_kill_all -9 "${pid[@]}" "${vpid[@]}"
	rm -rf "$dir"
}
trap cleanup EXIT
bench_debugfs

# The tree: fio's file and the source tarball, three copies.
mkdir -p "$dir/tree"
head -c "$fsize" /dev/urandom >"$dir/tree/fio.dat"
tar -C "$here/.." -cf "$dir/tree/tree.tar" libvmm include devices
tree_files=$(tar -tf "$dir/tree/tree.tar" | grep -vc '/$')
tree_bytes=$(stat -c %s "$dir/tree/tree.tar")
for s in mvfs qemu; do cp -a "$dir/tree" "$dir/share.$s"; done
truncate -s 256M "$dir/blk.img"
mkfs.ext4 -q -F -d "$dir/tree" "$dir/blk.img" || bench_die "mkfs.ext4 -d"

append="quiet guest.run=fs-bench guest.runtime=$runtime guest.fsize=$fsize guest.files=$files"
for s in mvfs qemu; do
	"$vfsd" --socket-path="$dir/$s.sock" -o source="$dir/share.$s" -o cache="$cache" \
		--thread-pool-size=0 </dev/null >"$dir/$s.vfsd.log" 2>&1 &
	vpid[$s]=$!
done
for s in mvfs qemu; do
	"$here/../tests/e2e/wait-listening.sh" "$dir/$s.sock" ||
		{ cat "$dir/$s.vfsd.log" >&2; bench_die "virtiofsd ($s) did not start listening"; }
done

# boot SIDE: starts the VM, stdin and stdout FIFOs held open here both ways
# (no open ever waits, no EOF while the VM runs).
boot() {
	local s=$1 cmd
	mkfifo "$dir/$s.in" "$dir/$s.out"
	exec {fd}<>"$dir/$s.in"
	fin[$s]=$fd
	exec {fd}<>"$dir/$s.out"
	fout[$s]=$fd
	case $s in
	mvfs)
		cmd=("$vmm" --smp 1 --mem 512M --mem-backend memfd --kernel "$kernel" --initrd "$initrd"
			--fs "tag=share,socket=$dir/mvfs.sock,queue-size=1024"
			--disk "path=$tools,ro=on,serial=tools" --stats-json
			--append "$append guest.mode=fs") ;;
	mvblk)
		cmd=("$vmm" --smp 1 --mem 512M --mem-backend memfd --kernel "$kernel" --initrd "$initrd"
			--disk "path=$dir/blk.img,serial=data"
			--disk "path=$tools,ro=on,serial=tools" --stats-json
			--append "$append guest.mode=blk") ;;
	qemu)
		# minivmm's default command line + the same payload arguments.
		# shellcheck disable=SC2054 # commas inside QEMU options
		cmd=("$qemu" -enable-kvm -cpu host -M pc -smp 1 -m 512M
			-object memory-backend-memfd,id=mem,size=512M,share=on -numa node,memdev=mem
			-nographic -nodefaults -no-user-config -serial stdio -no-reboot
			-bios /usr/share/qemu/qboot.rom -kernel "$kernel" -initrd "$initrd"
			-chardev "socket,id=fs0,path=$dir/qemu.sock"
			-device vhost-user-fs-pci,chardev=fs0,tag=share,queue-size=1024
			-drive "file=$tools,if=none,id=tools,format=raw,readonly=on,file.locking=off"
			-device virtio-blk-pci,drive=tools,serial=tools
			-append "console=ttyS0 reboot=k panic=-1 pci=conf1 i8042.noaux i8042.nopnp i8042.dumbkbd $append guest.mode=fs") ;;
	esac
	t_start[$s]=$(bench_now_ns)
	"${cmd[@]}" <"$dir/$s.in" >"$dir/$s.out" 2>"$dir/$s.err" &
	pid[$s]=$!
}

# KVM exits of a VM so far (debugfs; no fork): EXITS, empty if unknown.
EXITS=
kvm_exits() {
	local d v
	EXITS=
	for d in /sys/kernel/debug/kvm/"$1"-*; do
		[[ -r $d/exits ]] && read -r v <"$d/exits" && EXITS=$v
		return 0
	done
}

# alive PID: the process runs (not a zombie: ours are reaped only at the
# end); no fork.
alive() {
	local st
	{ read -r _ _ st _ <"/proc/$1/stat"; } 2>/dev/null || return 1
	[[ $st != Z ]]
}

# wait_for SIDE PATTERN SECONDS: reads the VM's console until a line
# matching PATTERN (a glob), logging it; LINE is that line.  Reads the
# VM's KVM exits at FSB-BEGIN (E0) and FSB-END (E1).  1 on timeout.
LINE='' E0='' E1=''
wait_for() {
	local s=$1 end=$((SECONDS + $3)) line part=''
	while ((SECONDS < end)); do
		# Short reads, so that a VM that died (QEMU refusing an option,
		# say) is noticed in seconds, not at the timeout.
		# (A read that times out keeps what it got of a line: kept here.)
		if ! IFS= read -r -t 5 -u "${fout[$s]}" line; then
			part+=$line
			alive "${pid[$s]}" && continue
			LINE="the VM exited"
			return 1
		fi
		line=$part$line part=''
		line=${line%$'\r'}
		printf '%s\n' "$line" >>"$dir/$s.log"
		case $line in
		FSB-BEGIN*) kvm_exits "${pid[$s]}"; E0=$EXITS ;;
		FSB-END*) kvm_exits "${pid[$s]}"; E1=$EXITS ;;
		esac
		# shellcheck disable=SC2053 # PATTERN is a glob
		[[ $line == $2 ]] && { LINE=$line; return 0; }
		[[ $line == *MINIVMM-PAYLOAD-EXIT=* || $line == *"FAIL:"* ]] && { LINE=$line; return 1; }
	done
	LINE=
	return 1
}

fail_side() { # SIDE WHAT
	bench_log "$1: $2; console tail:"
	tail -n 30 "$dir/$1.log" | sed 's/^/bench: | /' >&2
	tail -n 10 "$dir/$1.err" | sed 's/^/bench: err| /' >&2
	bench_emit "$(jq -cn --arg s "$1" --arg w "$2" '{bench:"fs_error", side:$s, what:$w}')"
}

# shellcheck disable=SC2016 # the last argument is a jq filter
bench_emit_machine fs_machine --arg qemu "$("$qemu" --version | head -1)" \
	--arg vfsd "$("$vfsd" --version 2>&1 | head -1)" --arg cache "$cache" \
	--argjson rounds "$rounds" --argjson runtime "$runtime" --argjson fsize "$fsize" \
	--argjson files "$files" --argjson tf "$tree_files" --argjson tb "$tree_bytes" \
	'{qemu_version:$qemu, virtiofsd_version:$vfsd, cache:$cache, guest_vcpus:1,
	  guest_mem_mib:512, rounds:$rounds, fio_runtime_s:$runtime, fio_file_bytes:$fsize,
	  meta_files:$files, tree_files:$tf, tree_tar_bytes:$tb, queue_size:1024}'

rc=0
for s in "${sides[@]}"; do boot "$s"; done
declare -A up
for s in "${sides[@]}"; do
	if wait_for "$s" "FSB-READY*" 900; then
		up[$s]=1
		ms=$((($(bench_now_ns) - t_start[$s]) / 1000000))
		bench_log "$s up: $LINE (${ms} ms after its start, the three booting at once)"
		bench_emit "$(jq -cn --arg s "$s" --argjson ms "$ms" '{bench:"fs_boot", side:$s, ready_ms:$ms}')"
	else
		fail_side "$s" "no FSB-READY (${LINE:-timeout})"
		rc=1
	fi
done

for r in $(seq "$rounds"); do
	# Rotate the order: round 1 mvfs qemu mvblk, round 2 qemu mvblk mvfs, ...
	order=()
	for i in 0 1 2; do order+=("${sides[$(((i + r - 1) % 3))]}"); done
	for w in "${workloads[@]}"; do
		for s in "${order[@]}"; do
			[[ -n ${up[$s]:-} ]] || continue
			E0='' E1=''
			t0=$(bench_now_ns)
			printf '%s %s\n' "$w" "$r" >&"${fin[$s]}"
			if ! wait_for "$s" "FSB-END*" 900 || [[ $LINE == *failed=1* ]]; then
				fail_side "$s" "$w round $r failed (${LINE:-timeout})"
				[[ $LINE == *FSB-END* ]] || unset "up[$s]"
				rc=1
				continue
			fi
			wall_ms=$((($(bench_now_ns) - t0) / 1000000))
			# "FSB-END w=W r=R k=v ..." -> {"k":v, ...} (numbers only)
			obj=$(sed 's/^FSB-END w=[a-z]* r=[0-9]* //; s/\([a-z0-9_]*\)=\([0-9.]*\)/"\1":\2/g; s/ /,/g; s/.*/{&}/' <<<"$LINE")
			rec=$(jq -c --arg s "$s" --arg w "$w" --argjson r "$r" --argjson wall "$wall_ms" \
				--arg e0 "$E0" --arg e1 "$E1" \
				'{bench:"fs", side:$s, workload:$w, round:$r, host_wall_ms:$wall} + . +
				 (if $e0 != "" and $e1 != "" then {kvm_exits:(($e1 | tonumber) - ($e0 | tonumber))} else {} end)' \
				<<<"$obj") || { bench_log "$s $w round $r: cannot parse '$LINE'"; rc=1; continue; }
			bench_emit "$rec"
			bench_log "round $r $w $s: ${LINE#FSB-END w=* r=* } exits=$((${E1:-0} - ${E0:-0}))"
		done
	done
done

# Stop: the payload ends, /init reboots, both VMMs exit (reboot=k /
# -no-reboot); minivmm prints --stats-json on its way out.
for s in "${sides[@]}"; do
	[[ -n ${up[$s]:-} ]] && printf 'quit 0\n' >&"${fin[$s]}"
done
for s in "${sides[@]}"; do
	for _ in $(seq 600); do alive "${pid[$s]}" || break; sleep 0.1; done
	if alive "${pid[$s]}"; then
		bench_log "$s still running 60 s after quit: killed"
		kill -9 "${pid[$s]}"
	fi
	wait "${pid[$s]}" 2>/dev/null
	unset "pid[$s]"
done
for s in mvfs mvblk; do
	st=$(grep -o '{"kvm":.*' "$dir/$s.err" | tail -n 1)
	if [[ -n $st ]] && jq -e . >/dev/null 2>&1 <<<"$st"; then
		bench_emit "$(jq -c --arg s "$s" '{bench:"fs_vmm_stats", side:$s, stats:.}' <<<"$st")"
	else
		bench_log "$s: no --stats-json line in its stderr"
		tail -n 5 "$dir/$s.err" | sed 's/^/bench: err| /' >&2
	fi
done
exit $rc
