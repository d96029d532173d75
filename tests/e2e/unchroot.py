#!/usr/bin/env python3
# unchroot.py CMD [ARGS...]: run CMD with the chroot undone (root only, in a
# mount namespace of its own: run it under `unshare --mount`).
#
# The rig's L1 runs tests chrooted into an overlay of the host's / at
# /newroot (tests/rig/l1-init), and the kernel refuses a user namespace to
# a chrooted process (EPERM), which passt creates to sandbox itself.  So:
# leave the chroot (a chroot into a subdirectory, then ".." up to the real
# root), move the overlay onto / as switch_root does, and chroot into it:
# the same files at the same paths, now the namespace's root.
import ctypes
import os
import sys
import tempfile

MS_REC, MS_PRIVATE, MS_MOVE = 0x4000, 1 << 18, 8192
libc = ctypes.CDLL(None, use_errno=True)


def mount(src, dst, flags):
    if libc.mount(src, dst, None, flags, None) != 0:
        e = ctypes.get_errno()
        sys.exit(f"unchroot: mount {dst}: {os.strerror(e)}")


newroot = None
mount(None, b"/", MS_REC | MS_PRIVATE)
here = tempfile.mkdtemp()
# Where our / sits in the real tree: found from the real root below.
st = os.stat("/")
os.chroot(here)
for _ in range(256):
    os.chdir("..")
os.chroot(".")
for cand in ("/newroot", "/"):
    try:
        s = os.stat(cand)
    except OSError:
        continue
    if (s.st_dev, s.st_ino) == (st.st_dev, st.st_ino):
        newroot = cand
        break
if newroot is None:
    sys.exit("unchroot: the chroot's root not found at /newroot")
if newroot != "/":
    os.chdir(newroot)
    mount(b".", b"/", MS_MOVE)
    os.chroot(".")
os.chdir("/")
os.rmdir(here)
os.execvp(sys.argv[1], sys.argv[1:])
