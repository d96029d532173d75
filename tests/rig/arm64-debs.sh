# shellcheck shell=bash
# arm64-debs.sh (sourced, after lib.sh): an aarch64 program from Debian's
# arm64 .debs with its shared-library closure, for the arm64 rig (whose L1
# and L2 userlands are static): fio for the guest's tools disk
# (mktools.sh), virtiofsd for the L1 (fetch-virtiofsd.sh).  Nothing of
# arm64 is installed: the .debs are fetched with `apt-get download` and
# unpacked with dpkg-deb -x into a private directory (`dpkg
# --add-architecture arm64` and `apt-get update` must have run;
# scripts/deps.sh does).  The closure follows the ELF NEEDED entries
# (aarch64-linux-gnu-readelf -d) from the program: a library not yet
# unpacked is looked for in the Depends/PreDepends of the package owning
# the file that needs it, so only those Depends lines are downloaded.  The
# result holds the program and each library at the path it is found under
# (its soname), as files, and the program's interpreter
# (lib/ld-linux-aarch64.so.1).

# deb_depends PKG: the packages PKG:arm64 Depends/PreDepends on (each
# alternative; virtual packages, printed <like-this>, skipped).
deb_depends() {
	apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
		--no-replaces --no-enhances "$1:arm64" 2>/dev/null |
		sed -n 's/^ *|\{0,1\}\(Pre\)\{0,1\}Depends: \([^< ][^ ]*\)$/\2/p' | sed 's/:arm64$//' | sort -u
}

# x_real ROOT PATH: PATH (relative to ROOT) with its symlinks resolved inside
# ROOT (absolute link targets are ROOT-relative); empty when it does not
# exist there.
x_real() {
	local root="$1" p="$2" t i
	for ((i = 0; i < 40; i++)); do
		if [[ -L "$root/$p" ]]; then
			t=$(readlink "$root/$p")
			if [[ $t == /* ]]; then p=${t#/}; else p=$(dirname "$p")/$t; fi
			p=$(realpath -m -s "/$p")
			p=${p#/}
			continue
		fi
		[[ -e "$root/$p" ]] && echo "$p"
		return 0
	done
}

# arm64_deb_closure PKG FILE DEST: FILE of PKG:arm64 (a path in the
# package, no leading /) and its library closure (see the top) into
# DEST/root, the list of packages into DEST/packages (first line: "PKG
# VERSION").
arm64_deb_closure() {
	local pkg="$1" file="$2" dest="$3" t p deb f soname dir found real rp rpath rpdirs interp
	t=$(mktemp -d "$RIG_CACHE/.deb-root.XXXXXX")
	mkdir -p "$t/debs" "$t/x" "$t/root"
	declare -A got=() owner=() expanded=() seen=()
	local todo=("$pkg") want new closure missing
	while :; do
		want=()
		for p in "${todo[@]}"; do
			[[ -n ${got[$p]:-} ]] || want+=("$p:arm64")
		done
		if ((${#want[@]})); then
			if ! (cd "$t/debs" && apt-get download -q "${want[@]}" >>"$t/apt.log" 2>&1); then
				# One at a time: a dependency with no arm64 build
				# (arch all, say) must not sink the others.
				for p in "${want[@]}"; do
					(cd "$t/debs" && apt-get download -q "$p" >>"$t/apt.log" 2>&1) || true
				done
			fi
			for deb in "$t"/debs/*.deb; do
				p=$(dpkg-deb -f "$deb" Package)
				[[ -n ${got[$p]:-} ]] && continue
				got[$p]=$deb
				dpkg-deb -x "$deb" "$t/x"
				while read -r f; do
					owner[${f#./}]=$p
				done < <(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { print $6 }')
			done
			[[ -n ${got[$pkg]:-} ]] || {
				cat "$t/apt.log" >&2
				rm -rf "$t"
				rig_die "apt-get download $pkg:arm64 failed; run 'dpkg --add-architecture arm64 && apt-get update' first (scripts/deps.sh does)"
			}
		fi
		# Walk the NEEDED entries from FILE.
		# Its program interpreter (PT_INTERP) at its own path, where
		# fio's users look for it (tests/guest/blklib).
		interp=$(aarch64-linux-gnu-readelf -l "$t/x/$file" |
			sed -n 's/.*Requesting program interpreter: \/\(.*\)\]$/\1/p')
		todo=() closure=("$file") missing=0 seen=()
		seen[$file]=1
		if [[ -n $interp ]]; then
			closure+=("$interp")
			real=$(x_real "$t/x" "$interp")
			seen[${real:-$interp}]=1
		fi
		local i=0
		while ((i < ${#closure[@]})); do
			f=${closure[i]}
			i=$((i + 1))
			real=$(x_real "$t/x" "$f")
			[[ -n $real ]] || continue # the interpreter, before libc6 is in
			local elf=$real
			rp=()
			while read -r rpath; do
				IFS=: read -r -a rpdirs <<<"$rpath"
				rp+=("${rpdirs[@]}")
			done < <(aarch64-linux-gnu-readelf -d "$t/x/$elf" |
				sed -n 's/.*(\(RUN\)\{0,1\}PATH).*\[\(.*\)\]$/\2/p')
			while read -r soname; do
				found=
				for dir in "${rp[@]}" /lib/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu /lib /usr/lib; do
					dir=${dir//\$ORIGIN/\/$(dirname "$elf")}
					dir=${dir#/}
					[[ -n $(x_real "$t/x" "$dir/$soname") ]] && { found=$dir/$soname; break; }
				done
				if [[ -z $found ]]; then
					missing=1
					p=${owner[$elf]:-}
					if [[ -n $p && -z ${expanded[$p]:-} ]]; then
						expanded[$p]=1
						mapfile -t -O "${#todo[@]}" todo < <(deb_depends "$p")
					fi
					continue
				fi
				# Once per file (libc names the loader too).
				real=$(x_real "$t/x" "$found")
				[[ -n ${seen[$real]:-} ]] && continue
				seen[$real]=1
				closure+=("$found")
			done < <(aarch64-linux-gnu-readelf -d "$t/x/$elf" |
				sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
		done
		((missing)) || break
		new=0
		for p in "${todo[@]}"; do
			[[ -n ${got[$p]:-} ]] || new=1
		done
		((new)) || {
			rm -rf "$t"
			rig_die "$pkg:arm64: libraries not found in the Depends of the packages unpacked"
		}
	done
	# The closure, at the paths it is found under (the soname), as files.
	for f in "${closure[@]}"; do
		mkdir -p "$t/root/$(dirname "$f")"
		cp "$t/x/$(x_real "$t/x" "$f")" "$t/root/$f"
	done
	{
		echo "$pkg $(dpkg-deb -f "${got[$pkg]}" Version)"
		# Only the packages that contribute a file.
		declare -A used=()
		for f in "${closure[@]}"; do
			used[${owner[$(x_real "$t/x" "$f")]}]=1
		done
		for p in "${!used[@]}"; do
			deb=${got[$p]}
			printf '%s %s %s\n' "$p" "$(dpkg-deb -f "$deb" Version)" "$(sha256sum <"$deb" | cut -d' ' -f1)"
		done | LC_ALL=C sort
	} >"$t/root.packages"
	mv "$t/root.packages" "$t/packages"
	rm -rf "$t/x" "$t/debs"
	rm -rf "$dest"
	mv -T "$t" "$dest"
}

# arm64_deb_root NAME PKG FILE: sets ARM64_DEB_ROOT to CACHE/NAME (the
# arm64 cache), holding FILE of PKG:arm64 and its closure
# (arm64_deb_closure), fetched when missing or when PKG:arm64's candidate
# version moved.
arm64_deb_root() {
	ARM64_DEB_ROOT="$RIG_CACHE/$1"
	local pkg="$2" file="$3" cand have=
	cand=$(apt-cache policy "$pkg:arm64" 2>/dev/null | sed -n 's/^ *Candidate: //p')
	[[ -s "$ARM64_DEB_ROOT/packages" ]] && read -r _ have <"$ARM64_DEB_ROOT/packages"
	if [[ -n $have && ($cand == "$have" || -z $cand || $cand == "(none)") ]]; then
		return 0
	fi
	rig_need apt-get apt-cache dpkg-deb aarch64-linux-gnu-readelf realpath
	mkdir -p "$RIG_CACHE"
	rig_lock "$RIG_CACHE/.$1.lock"
	have=
	[[ -s "$ARM64_DEB_ROOT/packages" ]] && read -r _ have <"$ARM64_DEB_ROOT/packages"
	[[ -n $have && $cand == "$have" ]] && return 0 # fetched while we waited
	arm64_deb_closure "$pkg" "$file" "$ARM64_DEB_ROOT"
	exec 9>&- # (rig_entry_new takes fd 9 next)
}
