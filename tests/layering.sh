#!/bin/bash
# tests/layering.sh [SOURCE_DIR]: the include graph follows the layers
# (CMakeLists.txt names them):
#   libvmm/core     may include core and the public header (include/)
#   libvmm/arch/A   core, its own arch A, include/
#   devices/*       core, devices, include/
#   libvmm/machine  core, devices, include/ (the arch-neutral assembly and
#                   the public API)
#   libvmm/machine/A  all that, and arch A (the platform's assembly)
# Each '#include "X"' is resolved as the compiler does (the including
# file's folder first, then the -I roots in CMakeLists.txt's order), and
# the folder it lands in must be allowed.  Also: only libvmm/arch,
# libvmm/machine/A and core/util/compiler.h (cpu_relax) may test an
# architecture macro.  Inside a core module (M.c with parts M-PART.c), a
# part never includes M.h.
# Prints every violation; exit 1 if any.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
roots=(include libvmm/core libvmm/arch libvmm/machine devices)

# The helpers set a variable instead of printing: no subshell, no fork per
# include (the script read ~600 includes with ~2,500 forks: 31-36 s; now
# it forks once per file, for sed).
layer() { # PATH -> LAYER: core | arch:A | devices | machine | public | ?
	local a
	case "$1" in
	libvmm/core/*) LAYER=core ;;
	libvmm/arch/*) a=${1#libvmm/arch/}; LAYER="arch:${a%%/*}" ;;
	libvmm/machine/*/*) a=${1#libvmm/machine/}; LAYER="machine:${a%%/*}" ;;
	libvmm/machine/*) LAYER=machine ;;
	devices/*) LAYER=devices ;;
	include/*) LAYER=public ;;
	*) LAYER="?" ;;
	esac
}

normpath() { # PATH -> NORM: PATH without "." and "dir/.." parts (relative)
	local part out=() IFS=/
	for part in $1; do
		case "$part" in
		'' | .) ;;
		..) ((${#out[@]})) && unset 'out[${#out[@]}-1]' ;;
		*) out+=("$part") ;;
		esac
	done
	NORM="${out[*]}"
}

allowed() { # FROM TO
	local from=$1 to=$2
	[[ $to == public || $to == core ]] && return 0
	case "$from" in
	core) return 1 ;;
	arch:*) [[ $to == "$from" ]] ;;
	devices) [[ $to == devices ]] ;;
	machine) [[ $to == devices || $to == machine ]] ;;
	machine:*) [[ $to == devices || $to == machine || $to == "$from" ||
		$to == "arch:${from#machine:}" ]] ;;
	*) return 1 ;;
	esac
}

bad=0 n=0
while IFS= read -r f; do
	layer "$f"
	from=$LAYER
	while IFS= read -r inc; do
		n=$((n + 1))
		hit=
		for d in "${f%/*}" "${roots[@]}"; do
			[[ -f $d/$inc ]] && { normpath "$d/$inc"; hit=$NORM; break; }
		done
		if [[ -z $hit ]]; then
			echo "layering: $f: #include \"$inc\" not found under the include roots"
			bad=1
			continue
		fi
		layer "$hit"
		to=$LAYER
		allowed "$from" "$to" && continue
		echo "layering: $f ($from) includes $hit ($to)"
		bad=1
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done < <(find libvmm/core libvmm/arch libvmm/machine devices -name '*.[ch]' | sort)

# Inside a core module (M.c and its parts M-PART.c/.h), the parts lie below
# M.c and are called by it: a part never includes M.h, which would be a
# call back up into its caller.
while IFS= read -r f; do
	base=${f##*/} dir=${f%/*}
	mod=${base%%-*}
	[[ -f $dir/$mod.h ]] || continue
	if grep -qE "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"$mod\.h\"" "$f"; then
		echo "layering: $f, a part of module $mod, includes $mod.h (its caller)"
		bad=1
	fi
done < <(find libvmm/core -name '*-*.[ch]' | sort)

while IFS= read -r hit; do
	echo "layering: architecture test outside libvmm/arch: $hit"
	bad=1
done < <(grep -rnE '__(x86_64|i386|aarch64|arm|riscv)__|__builtin_ia32' libvmm/core devices libvmm/machine/*.[ch] |
	grep -v '^libvmm/core/util/compiler.h:' || true)

# The programs (examples/) use the public header, their own folder,
# examples/common and the one header shared with minivmm-blkd
# (devices/vhost-user/shared): never the library's inside.
while IFS= read -r f; do
	while IFS= read -r inc; do
		hit=
		for d in "${f%/*}" include examples/common devices/vhost-user/shared; do
			[[ -f $d/$inc ]] && { normpath "$d/$inc"; hit=$NORM; break; }
		done
		# (A relative path such as "../../libvmm/core/X.h" resolves too:
		# where it lands is what counts.)
		case "$hit" in
		include/* | examples/* | devices/vhost-user/shared/*) continue ;;
		esac
		echo "layering: $f: #include \"$inc\" is neither public, shared nor the program's own"
		bad=1
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done < <(find examples -name '*.[ch]' | sort)

((n > 100)) || { echo "layering: only $n includes seen: wrong tree?"; exit 1; }
((bad)) && exit 1
echo "layering: $n includes checked, every one within its layer"
