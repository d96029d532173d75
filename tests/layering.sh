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

layer() { # PATH -> core | arch:A | devices | machine | public | ?
	case "$1" in
	libvmm/core/*) echo core ;;
	libvmm/arch/*) local a=${1#libvmm/arch/}; echo "arch:${a%%/*}" ;;
	libvmm/machine/*/*) local a=${1#libvmm/machine/}; echo "machine:${a%%/*}" ;;
	libvmm/machine/*) echo machine ;;
	devices/*) echo devices ;;
	include/*) echo public ;;
	*) echo "?" ;;
	esac
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
	from=$(layer "$f")
	while IFS= read -r inc; do
		n=$((n + 1))
		hit=
		for d in "$(dirname "$f")" "${roots[@]}"; do
			[[ -f $d/$inc ]] && { hit=$(realpath --relative-to=. "$d/$inc"); break; }
		done
		if [[ -z $hit ]]; then
			echo "layering: $f: #include \"$inc\" not found under the include roots"
			bad=1
			continue
		fi
		to=$(layer "$hit")
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

((n > 100)) || { echo "layering: only $n includes seen: wrong tree?"; exit 1; }
((bad)) && exit 1
echo "layering: $n includes checked, every one within its layer"
