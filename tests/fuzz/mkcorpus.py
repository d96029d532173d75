#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpus tests/fuzz/corpus/<target>/<name> (committed; rerun
only when a target's input encoding changes).  Each seed is a small, valid
program for its target's action-record decoder (see the fuzz_*.c headers)."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def u8(v): return struct.pack('<B', v & 0xff)
def u16(v): return struct.pack('<H', v & 0xffff)
def u32(v): return struct.pack('<I', v & 0xffffffff)
def u64(v): return struct.pack('<Q', v & 0xffffffffffffffff)


def write(target, name, data):
    d = os.path.join(HERE, 'corpus', target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


# ---- fuzz_virtqueue_blk ---------------------------------------------------
QSEL, CHAIN, BLK, INDIRECT, KICK, QRESET, DEVRESET, CFG_RD, CFG_WR, RAM, \
    AVAIL_IDX, SUPPRESS = range(12)
T_IN, T_OUT, T_FLUSH, T_GET_ID, T_DISCARD, T_WZ = range(6)  # type selectors
ALL = 0xffffffffffffffff


def blk(sel, sector, datas=(), mode=0):
    """datas: list of (d byte, off) or (d, (sector, nsec, flags)) for DWZ."""
    out = u8(BLK) + u8(sel) + u8(mode)
    out += u64(sector) if mode & 0x80 else u16(sector)
    out += u8(len(datas))
    for d, x in datas:
        out += u8(d)
        if isinstance(x, tuple):
            out += u16(x[0]) + u8(x[1]) + u8(x[2])
        else:
            out += u16(x)
    return out


def desc(addr, length, fl, nxt=None):
    out = u32(addr) + u32(length) + u8(fl)
    if fl & 0x80:
        out += u8(nxt)
    return out


VQ = 'fuzz_virtqueue_blk'
write(VQ, 'rw_flush_getid',
      u64(ALL) + u8(0x05) +
      blk(T_IN, 3, [(0, 0x100), (1, 0x800)]) + u8(KICK) +
      blk(T_OUT, 5, [(0x40, 0x1000)]) + u8(KICK) +
      blk(T_FLUSH, 0) + u8(KICK) +
      u8(BLK) + u8(T_GET_ID) + u8(0) + u16(0) + u8(1) + u8(0x80) + u32(20) +
      u16(0x300) + u8(KICK))
write(VQ, 'indirect_two_queues',
      u64(ALL) + u8(0x06) +
      blk(T_IN, 0, [(3, 0x0), (2, 0x2000)], mode=1) + u8(QSEL) + u8(1) +
      blk(T_OUT, 120, [(0, 0x400)], mode=1) + u8(KICK) + u8(QSEL) + u8(0) +
      u8(KICK))
write(VQ, 'discard_write_zeroes',
      u64(ALL) + u8(0x01) +
      blk(T_DISCARD, 0, [(0, (8, 16, 0))]) +
      blk(T_WZ, 0, [(0, (0, 8, 1))]) + blk(T_WZ, 0, [(0, (120, 16, 0))]) +
      u8(KICK))
write(VQ, 'raw_loop_then_reset',
      u64(ALL) + u8(0x02) +
      u8(CHAIN) + u8(1) + desc(0x100, 16, 0x81, 1) + desc(0x200, 1, 0x83, 0) +
      u8(KICK) + u8(KICK) + u8(QRESET) +
      blk(T_IN, 1, [(0, 0x100)]) + u8(KICK))
write(VQ, 'indirect_raw_cfg_event_idx',
      u64(ALL) + u8(0x03) +
      u8(INDIRECT) + u8(2) + u8(0) + desc(0x100, 16, 0x00) +
      desc(0x200, 512, 0x01) + desc(0x400, 1, 0x01) +
      u8(SUPPRESS) + u8(0) + u16(0) + u8(KICK) +
      u8(CFG_RD) + u8(0) + u8(8) + u8(CFG_WR) + u8(32) + u8(1) + u8(0) +
      u8(CFG_RD) + u8(32) + u8(1) + u8(DEVRESET) + u64(0) +
      u8(RAM) + u16(0x100) + u8(4) + b'\x04\x00\x00\x00' +
      u8(AVAIL_IDX) + u8(200) + u8(KICK))

# ---- fuzz_virtio_pci --------------------------------------------------------
P_CFG, P_PIO, P_MMIO, P_INIT, P_STATUS, P_FAIL, P_KICK, P_CFGCHG, P_NRESET, \
    P_MSIX, P_BAR = range(11)
PCI = 'fuzz_virtio_pci'


def init(nq, want=ALL, m=2, rings=None, vec=0):
    out = u8(P_INIT) + u64(want) + u8(m)
    if m & 2:
        for v in range(nq + 1):
            out += u8(v) + u16(0x20 + v) + u8(0)
        out += u8(nq)  # config vector
    for q in range(nq):
        base = 0x1000 + q * 0x4000
        out += u8(0) + u32(base) + u32(base + 0x1000) + u32(base + 0x2000)
        out += u8(q + vec)
    return out


write(PCI, 'probe_and_start', u8(0x41) + u8(0) + init(2) +
      u8(P_KICK) + u8(0) + u8(P_KICK) + u8(1) + u8(P_CFGCHG) +
      u8(P_STATUS) + u8(0))
write(PCI, 'cfg_space_sweep', u8(0x00) + u8(0) + b''.join(
    u8(P_CFG) + u8(0) + u8(off) + u8(2) + u32(0) for off in range(0, 256, 4)))
write(PCI, 'common_sweep', u8(0x02) + u8(0) + b''.join(
    u8(P_MMIO) + u8(0) + u8(2) + u16(off) + u64(0) for off in range(0, 0x38, 4)))
write(PCI, 'ioctl_fails_at_driver_ok', u8(0x01) + u8(3) + init(2) +
      u8(P_FAIL) + u8(0) + init(2, m=2) + u8(P_NRESET) + u8(P_STATUS) + u8(0))
write(PCI, 'bar_move_and_msix_mask', u8(0x00) + u8(0) + init(1) +
      u8(P_BAR) + u8(2) + u32(5) + u8(P_MSIX) + u16(0xc000) +
      u8(P_MMIO) + u8(4) + u8(2) + u16(12) + u64(1) +
      u8(P_MSIX) + u16(0x8000) + u8(P_BAR) + u8(1) + u32(0) + u8(P_KICK) + u8(0) +
      u8(P_BAR) + u8(1) + u32(6) + u8(P_STATUS) + u8(0))

# ---- fuzz_bzimage -----------------------------------------------------------
def bzimage(setup_sects=1, kernel=b'\xf4' * 4096, version=0x020f,
            pref=0x1000000, cmdline_size=2048):
    setup = bytearray((setup_sects + 1) * 512)
    setup[0x1f1] = setup_sects
    struct.pack_into('<I', setup, 0x1f4, (len(kernel) + 15) // 16)
    struct.pack_into('<H', setup, 0x1fe, 0xAA55)
    setup[0x200] = 0xeb
    setup[0x201] = 0x66
    setup[0x202:0x206] = b'HdrS'
    struct.pack_into('<H', setup, 0x206, version)
    struct.pack_into('<I', setup, 0x22c, 0x7fffffff)   # initrd_addr_max
    struct.pack_into('<I', setup, 0x230, 0x200000)     # kernel_alignment
    setup[0x234] = 1                                    # relocatable
    struct.pack_into('<H', setup, 0x236, 0x1 | 0x2)    # XLF_KERNEL_64 | CAN_BE_LOADED_ABOVE_4G
    struct.pack_into('<I', setup, 0x238, cmdline_size)
    struct.pack_into('<Q', setup, 0x258, pref)
    struct.pack_into('<I', setup, 0x260, 0x400000)     # init_size
    return bytes(setup) + kernel.ljust((len(kernel) + 15) // 16 * 16, b'\0')


def bz_input(ram, initrd, vcpus, fix, cmdline, image):
    return u8(ram) + u32(initrd) + u8(vcpus) + u8(fix) + u16(len(cmdline)) + \
        cmdline + image


BZ = 'fuzz_bzimage'
CL = b'console=ttyS0 reboot=k panic=-1'
write(BZ, 'boot_64m_initrd', bz_input(255, (1 << 30) | 4096, 2, 0, CL, bzimage()))
write(BZ, 'initrd_at_top', bz_input(200, (2 << 30) | 0x100000, 1, 0, CL, bzimage()))
write(BZ, 'small_ram_no_fit', bz_input(8, 0, 1, 0, CL, bzimage()))
write(BZ, 'too_many_vcpus', bz_input(255, 0, 255, 0, CL, bzimage()))
write(BZ, 'fixups_on_noise', bz_input(255, 0, 4, 0x1f, b'', bytes(range(256)) * 12))
write(BZ, 'long_cmdline', bz_input(255, 0, 1, 0, b'x' * 3000,
                                  bzimage(cmdline_size=100)))

# ---- fuzz_pvh ----------------------------------------------------------------
def vmlinux(entry=0x1000040, paddr=0x1000000, notes=True, text=b'\xf4' * 4096):
    # ELF64 header, two PT_LOAD (text; data + bss) and a PT_NOTE with the
    # Xen guest-OS note and XEN_ELFNOTE_PHYS32_ENTRY (18), as in a vmlinux.
    def note(t, desc):
        return struct.pack('<III', 4, len(desc), t) + b'Xen\0' + \
            desc.ljust((len(desc) + 3) // 4 * 4, b'\0')
    nt = note(6, b'linux\0') + note(18, struct.pack('<I', entry))
    text_off, data_off, note_off = 0x1000, 0x1000 + len(text), 0x200
    phnum = 3 if notes else 2
    eh = b'\x7fELF' + bytes([2, 1, 1]) + bytes(9) + struct.pack(
        '<HHIQQQIHHHHHH', 2, 62, 1, 0xffffffff81000000, 64, 0, 0, 64, 56,
        phnum, 64, 0, 0)
    ph = struct.pack('<IIQQQQQQ', 1, 5, text_off, 0, paddr, len(text), len(text), 0x1000)
    ph += struct.pack('<IIQQQQQQ', 1, 6, data_off, 0, paddr + 0x100000, 0x100, 0x3000, 0x1000)
    if notes:
        ph += struct.pack('<IIQQQQQQ', 4, 4, note_off, 0, 0, len(nt), len(nt), 4)
    img = bytearray(data_off + 0x100)
    img[0:len(eh)] = eh
    img[64:64 + len(ph)] = ph
    img[note_off:note_off + len(nt)] = nt
    img[text_off:text_off + len(text)] = text
    return bytes(img)


def pvh_input(ram, fix, initrd, cmdline, image):
    return u8(ram) + u8(fix) + u16(initrd) + u16(len(cmdline)) + cmdline + image


PVH = 'fuzz_pvh'
write(PVH, 'boot_with_initrd', pvh_input(255, 0, 5000, CL, vmlinux()))
write(PVH, 'small_ram_no_fit', pvh_input(0, 0, 0, CL, vmlinux(paddr=0x1f00000)))
write(PVH, 'entry_outside', pvh_input(255, 0, 0, CL, vmlinux(entry=0x800000)))
write(PVH, 'no_notes', pvh_input(255, 0, 0, CL, vmlinux(notes=False)))
write(PVH, 'fixups_on_noise', pvh_input(255, 7, 100, b'', bytes(range(256)) * 12))
write(PVH, 'long_cmdline', pvh_input(255, 0, 0, b'x' * 3000, vmlinux()))

# ---- fuzz_cli ----------------------------------------------------------------
CLI = 'fuzz_cli'
def argv(*a): return b'\0'.join(x.encode() for x in a)


write(CLI, 'full', argv('--kernel', 'bz', '--initrd', 'ird', '--mem', '512M', '-c', '4',
                        '--disk', 'path=a.img,num-queues=2,queue-size=64,ro=on,serial=x,'
                        'poll-us=50,cache=unsafe,event-idx=off,direct=off',
                        '--append', 'quiet', '--stats-json', '-v'))
write(CLI, 'short_cluster', argv('-vvq', '-kbz', '-m2G', '-dimg', '-p', 'root=/dev/vda'))
write(CLI, 'errors', argv('--disk', 'path=x,queue-size=3', '--mem', '17179869184T'))
write(CLI, 'help', argv('-h', '--version', 'extra'))
write(CLI, 'sizes', argv('1024K', '2GiB', '300', '99999999999999999999G', 'x=y,z'))

# ---- fuzz_vhost_user -----------------------------------------------------------
VU = 'fuzz_vhost_user'
(GET_FEATURES, SET_FEATURES, SET_OWNER, RESET_OWNER, SET_MEM_TABLE, SET_VRING_NUM,
 SET_VRING_ADDR, SET_VRING_BASE, GET_VRING_BASE, SET_VRING_KICK, SET_VRING_CALL,
 SET_VRING_ERR, GET_PROTOCOL_FEATURES, SET_PROTOCOL_FEATURES, GET_QUEUE_NUM,
 SET_VRING_ENABLE, GET_CONFIG, SET_CONFIG, GET_INFLIGHT_FD, SET_INFLIGHT_FD,
 RESET_DEVICE) = range(21)
ACK = 0x08    # flags byte: NEED_REPLY (version 1 is implied)
FIX = 0x10    # mode bit: useful memory table / ring addresses
RAM = 1 << 20
VIRTIO_FEATURES = (1 << 32) | (1 << 29) | (1 << 28) | (1 << 30)


def vu(op, payload=b'', flags=0, fds=0, mode=0, size=None):
    n = len(payload) if size is None else size
    return u8(op) + u8(flags) + u16(n) + u8(mode | fds) + payload


def vring(idx, num): return u32(idx) + u32(num)


def mem_table(*regions):
    out = u32(len(regions)) + u32(0)
    for gpa, size, uaddr, off in regions:
        out += u64(gpa) + u64(size) + u64(uaddr) + u64(off)
    return out


def ring_up(i, desc, avail, used, num=64):
    return (vu(SET_VRING_NUM, vring(i, num), ACK) +
            vu(SET_VRING_BASE, vring(i, 0), ACK) +
            vu(SET_VRING_ADDR, u32(i) + u32(0) + u64(desc) + u64(used) + u64(avail) +
               u64(0), ACK, mode=FIX) +
            vu(SET_VRING_KICK, u64(i), ACK, fds=1) +
            vu(SET_VRING_CALL, u64(i), ACK, fds=1) +
            vu(SET_VRING_ENABLE, vring(i, 1), ACK))


QEMU_INIT = (vu(SET_OWNER) + vu(GET_FEATURES) + vu(GET_PROTOCOL_FEATURES) +
             vu(SET_PROTOCOL_FEATURES, u64(0x2209)) + vu(GET_QUEUE_NUM) +
             vu(GET_CONFIG, u32(0) + u32(60) + u32(0) + bytes(60)) +
             vu(SET_FEATURES, u64(VIRTIO_FEATURES), ACK) +
             vu(SET_MEM_TABLE, mem_table((0, RAM - 1, 0, 0)), ACK, fds=1, mode=FIX))
write(VU, 'qemu_start_stop',
      QEMU_INIT + ring_up(0, 0x1000, 0x2000, 0x3000) + ring_up(1, 0x4000, 0x5000, 0x6000) +
      vu(SET_VRING_ENABLE, vring(0, 0), ACK) + vu(GET_VRING_BASE, vring(0, 0)) +
      vu(GET_VRING_BASE, vring(1, 0)) + vu(RESET_DEVICE, flags=ACK))
write(VU, 'remap_and_swap',
      QEMU_INIT + ring_up(0, 0x1000, 0x2000, 0x3000) +
      vu(SET_VRING_CALL, u64(0), ACK, fds=1) + vu(SET_VRING_ERR, u64(0), ACK, fds=1) +
      vu(SET_VRING_CALL, u64(0x100), ACK) +
      vu(SET_MEM_TABLE, mem_table((0, RAM - 1, 0, 0), (RAM, 4096, 0, 0)), ACK, fds=2,
         mode=FIX) +
      vu(SET_VRING_ADDR, u32(0) + u32(0) + u64(0x8000) + u64(0xa000) + u64(0x9000) +
         u64(0), ACK, mode=FIX) +
      vu(SET_CONFIG, u32(32) + u32(1) + u32(0) + b'\0', ACK) +
      vu(SET_VRING_KICK, u64(0), ACK, fds=1))
write(VU, 'malformed',
      vu(GET_FEATURES, flags=0x03) + vu(SET_FEATURES, u32(1)) +
      vu(SET_MEM_TABLE, mem_table((0, RAM, 0, 0)), fds=2) +
      vu(0x80, u8(99)) + vu(SET_VRING_KICK, u64(0)) + vu(GET_QUEUE_NUM, fds=1) +
      vu(GET_CONFIG, u32(0) + u32(300) + u32(0)) + vu(GET_FEATURES, fds=9) +
      vu(SET_OWNER, size=299))
write(VU, 'refused_values',
      QEMU_INIT + vu(SET_VRING_NUM, vring(5, 64), ACK) + vu(SET_VRING_NUM, vring(0, 100), ACK) +
      vu(SET_VRING_BASE, vring(0, 70000), ACK) +
      vu(SET_VRING_ADDR, u32(0) + u32(1) + u64(0) + u64(0) + u64(0) + u64(0), ACK) +
      vu(SET_VRING_KICK, u64(0x100), ACK) + vu(GET_INFLIGHT_FD, bytes(24), ACK) +
      vu(SET_MEM_TABLE, mem_table((0, 2 * RAM, 0, 0)), ACK, fds=1) +
      vu(SET_PROTOCOL_FEATURES, u64(1 << 12), ACK))
# ---- fuzz_vcon -----------------------------------------------------------------
V_CTL, V_RXBUF, V_TX, V_CHAIN, V_KICK, V_HOST_IN, V_RESET, V_RAM, V_AVAIL, \
    V_CFG = range(10)
DEV_READY, PORT_ADD, PORT_REMOVE, PORT_READY, CONSOLE_PORT, RESIZE, \
    PORT_OPEN, PORT_NAME = range(8)
VC = 'fuzz_vcon'


def vctl(isel, ev, val=1, shape=0, extra=b''):
    return u8(V_CTL) + u8(isel) + u8(ev) + u8(val) + u8(shape) + extra


def vrx(qsel, n=4, lsel=11): return u8(V_RXBUF) + u8(qsel) + u8(n - 1) + u8(lsel)
def vkick(q=0xff): return u8(V_KICK) + u8(q)
def vhost(data): return u8(V_HOST_IN) + u8(len(data)) + data


def vtx(port, *segs):
    out = u8(V_TX) + u8(port) + u8(len(segs) - 1)
    for s in segs:
        out += u8(len(s)) + s
    return out


# 2 ports: the Linux handshake, data both ways, the host's EOF.
write(VC, 'handshake_data_eof', u8(1) + u8(0) +
      vrx(0) + vctl(2, DEV_READY) + vkick() + vrx(0) +
      vctl(0, PORT_READY) + vctl(1, PORT_READY) + vrx(0x80, 4, 8) + vkick() +
      vhost(b'hello\0\xff\x80 world\n') + vkick() +
      vtx(0, b'abcde', b'xyz') + vtx(1, b'to a dead pipe') + vkick() +
      vctl(0, PORT_OPEN) + vkick() + vrx(0) +
      vhost(b'') + vrx(0x80, 2, 11) + vkick() + vrx(0) + vkick())
# 4 ports: every malformed control message shape and value.
write(VC, 'malformed_control', u8(2) + u8(0) + vrx(0) + vrx(0) +
      vctl(4, DEV_READY, 1, 1 | 3 << 3) + vctl(0, PORT_READY, 1, 2 | 5 << 3) +
      vctl(1, PORT_READY, 1, 3 | 20 << 3) + vctl(2, PORT_READY, 1, 4) +
      vctl(3, PORT_READY, 1, 5) + vctl(0, PORT_READY, 1, 6 | 2 << 3) +
      vkick() +
      vctl(5, PORT_READY) + vctl(0xf0, PORT_READY, 1, 0, u32(0x80000000)) +
      vctl(0, 9) + vctl(1, 0xf0, 1, 0, u16(0xffff)) + vctl(2, PORT_READY, 0) +
      vctl(3, PORT_OPEN, 0x80, 0, u16(2)) + vctl(0, DEV_READY, 0) +
      vctl(1, RESIZE) + vctl(1, CONSOLE_PORT) + vctl(1, PORT_REMOVE) +
      vkick() + vrx(0) + vkick())
# A 127-byte name into control buffers of 0, 1, 7, 8, 9, 135, 136 bytes.
write(VC, 'small_control_buffers', u8(0x11) + u8(0) +
      vrx(0, 4, 0) + vrx(0, 4, 4) + vrx(0, 2, 9) + vctl(2, DEV_READY) + vkick() +
      vctl(1, PORT_READY) + vctl(0, PORT_READY) + vkick() + vrx(0, 4, 9) + vkick())
# 31 ports: DEVICE_READY over and over with no buffers (pending bounded).
write(VC, 'max_ports_pending_flood', u8(3) + u8(0) +
      b''.join(vctl(31, DEV_READY) for _ in range(12)) + vkick(3) +
      vrx(0, 4, 8) + vctl(30, PORT_READY) + vctl(32, PORT_READY) + vkick() +
      vtx(30, b'port 30') + vkick())


def vchain(q, descs):
    out = u8(V_CHAIN) + u8(q) + u8(len(descs) - 1)
    for addr, ln, fl, nxt in descs:
        out += u32(addr) + u32(ln) + u8(fl)
        if fl & 0x80:
            out += u8(nxt)
    return out


# Raw chains, a loop, a jump of avail->idx, indirect, resets.
write(VC, 'raw_chains_resets', u8(1) + u8(0) + vrx(0) + vctl(2, DEV_READY) +
      vkick() +
      vchain(1, [(0x8000, 16, 0x81, 1), (0x8100, 4, 0x81, 0)]) + vkick(1) +
      u8(V_RESET) + u8(0) + vrx(0) + vctl(2, DEV_READY) + vkick() +
      vchain(0, [(0x8000, 64, 0x01, 0), ((2 << 30) | 5, 4096, 0x01, 0)]) +
      vhost(b'data') + vkick(0) +
      u8(V_AVAIL) + u8(3) + u8(40) + vkick(3) +
      vctl(0, PORT_READY, 1, 0xc7) + vkick(3) +
      u8(V_RESET) + u8(1) + vkick() +
      u8(V_RESET) + u8(2 | 2 << 3) + vrx(0) + vctl(2, DEV_READY) + vkick() +
      u8(V_RESET) + u8(4) + vkick() +
      u8(V_CFG) + u8(4) + u8(2) + u32(0) + u8(V_CFG) + u8(0) + u8(6) + u32(7) +
      u8(V_RAM) + u16(0x9000) + u8(8) + b'\x01' * 8)

# ---- fuzz_oci_proto ---------------------------------------------------------------
OP = 'fuzz_oci_proto'
READY, CONFIG, STARTED, ERROR = 1, 2, 3, 4


def frame(t, payload=b''): return u32(len(payload) + 1) + u8(t) + payload
def rec(t, v): return u16(t) + u32(len(v)) + v


write(OP, 'ready_started', u8(0x0c) + frame(READY) + frame(STARTED))
write(OP, 'error_text_split', u8(0x00) + frame(READY) +
      frame(ERROR, b'exec "/bin/x": no such file\n\x1b[31mred\x7f\x9b\0after'))
write(OP, 'config_records', u8(0x03) + frame(CONFIG, rec(1, b'/bin/sh') +
      rec(2, b'PATH=/bin') + rec(5, u32(1000)) + rec(11, b'/tmp\0tmpfs\0tmpfs\0') +
      u16(1) + u32(1000) + b'short'))
write(OP, 'zero_length_breaks', u8(0x02) + frame(READY) + u32(0) + frame(STARTED))
write(OP, 'max_length_then_over', u8(0x0c) + u32(4 << 20) + u8(ERROR) + b'x' * 100)
write(OP, 'over_max_length', u8(0x01) + frame(READY) + u32((4 << 20) + 1) +
      frame(STARTED))
write(OP, 'long_error', u8(0x08) + frame(ERROR, bytes(range(1, 256)) * 3))

# ---- fuzz_oci_shim ----------------------------------------------------------------
OS = 'fuzz_oci_shim'
G_RAW, G_FRAME, G_READ, C_NEW, C_CLOSE, SIG = range(6)


def g_frame(t, payload=b''): return u8(G_FRAME) + u8(t) + u16(len(payload)) + payload
def client(line): return u8(C_NEW) + u8(len(line)) + line


write(OS, 'start_ready_started', client(b'start\n') + g_frame(READY) +
      u8(G_READ) + u16(256) + g_frame(STARTED) + client(b'start\n') + u8(SIG) + u8(15) +
      u8(SIG) + u8(28) + u8(G_READ) + u16(256))
write(OS, 'error_flood', g_frame(READY) + (g_frame(ERROR, b'E' * 500) * 40) +
      client(b'start\n'))
write(OS, 'signal_before_start', client(b'signal 15\n') + client(b'signal 0\n') +
      client(b'signal x\n') + u8(SIG) + u8(2))
write(OS, 'guest_not_reading', g_frame(STARTED) + (u8(SIG) + u8(15)) * 200 +
      u8(G_READ) + u16(0xffff))
write(OS, 'malformed_stream', client(b'start\n') + g_frame(ERROR, b'no such file') +
      u8(G_RAW) + u16(5) + u32(0) + u8(1) + u8(G_RAW) + u16(4) + b'junk')
write(OS, 'clients', client(b'') + client(b'sta') + u8(C_CLOSE) + u8(0) +
      client(b'x' * 200) + client(b'start') + client(b'signal 9999999999\n') +
      u8(C_CLOSE) + u8(3))

# ---- fuzz_arm64_boot ----------------------------------------------------------
A64 = 'fuzz_arm64_boot'
F_MPIDR, F_NO_CMDLINE, F_RANGES, F_LOADER = 0x01, 0x02, 0x04, 0x08
F_FIX_MAGIC, F_FIX_SIZE, F_FDT_SIZE, F_FIX_TEXT = 0x10, 0x20, 0x40, 0x80


def arm64_image(text_offset=0, image_size=None, flags=0xa, body=4096):
    """A real-looking Image: EFI "MZ", a branch, the header, then code."""
    size = 64 + body
    hdr = b'MZ\0\x91' + u32(0x14000000) + u64(text_offset) + \
        u64(size + (1 << 20) if image_size is None else image_size) + \
        u64(flags) + u64(0) * 3 + b'ARM\x64' + u32(0)
    return hdr + bytes((i * 7 + 3) & 0xff for i in range(body))


def a64_input(nr_cpus, flags=F_LOADER, ram=63, base=0, base_extra=b'', cmdline=CL,
              initrd=b'\x05', loader_initrd=0, mpidr=(), ranges=None,
              fdt_size=None, image=None):
    """ram/base: the selector bytes (class 0: ram MiB, base 0x4000_0000),
    base_extra the base's field;
    initrd: the selector and its fields; loader_initrd: the file size class
    word (0: none); mpidr: (cpu, mode, value) records; ranges: 6 range
    records + uart_spi + last_bus, raw."""
    out = u8(ram) + u8(base) + base_extra + u16(nr_cpus) + u8(flags) + u16(len(cmdline)) + \
        cmdline + initrd + u32(loader_initrd)
    if flags & F_MPIDR:
        out += u8(len(mpidr)) + b''.join(u16(c) + u8(m) + u64(v)
                                         for c, m, v in mpidr)
    if flags & F_RANGES:
        out += ranges
    if flags & F_FDT_SIZE:
        out += fdt_size
    return out + u8(0) + (arm64_image() if image is None else image)


# gicr above 4 GiB, room for 4096 redistributors; the rest as virt.c.
GICR_HIGH = u8(0) + u8(1) + u64(1 << 40) + u32(4096 * 0x20000) + \
    u8(0) * 4 + u16(1) + u16(0)
write(A64, 'boot_1cpu_initrd', a64_input(1, loader_initrd=(1 << 30) | 4096))
write(A64, 'boot_4cpu_initrd_inside',
      a64_input(4, initrd=u8(1) + u32(32 << 20) + u32(1 << 20),
                loader_initrd=(2 << 30) | (3 << 20)))
write(A64, 'smp_300_mpidr',
      a64_input(300, flags=F_LOADER | F_MPIDR,
                mpidr=[(0, 0, 0x0), (17, 0, 0x10203), (299, 0, 0xfff)]))
write(A64, 'mpidr_aff3', a64_input(2, flags=F_MPIDR,
                                   mpidr=[(1, 1, 0x100000001)]))
write(A64, 'long_cmdline', a64_input(1, cmdline=b'console=ttyS0 ' + b'x' * 2100))
write(A64, 'cpus_4096', a64_input(4096, flags=F_RANGES, ram=0x80 | 3,
                                  ranges=GICR_HIGH))
write(A64, 'cpus_4097', a64_input(4097, flags=F_RANGES, ram=0x80 | 3,
                                  ranges=GICR_HIGH))
write(A64, 'legacy_image_unaligned_ram',
      a64_input(1, base=2, base_extra=u32(0x1000), cmdline=b'',
                image=arm64_image(0x80000, 0, 0)))
write(A64, 'small_fdt_buffer',
      a64_input(8, flags=F_FDT_SIZE, fdt_size=u8(1) + u32(1000)))
write(A64, 'fixups_on_noise',
      a64_input(2, flags=F_LOADER | F_FIX_MAGIC | F_FIX_SIZE | F_FIX_TEXT,
                image=bytes(range(256)) * 4))

# ---- fuzz_oci_config / fuzz_oci_state: the files themselves -------------------
import json

OC = 'fuzz_oci_config'
PODMAN = {
    'ociVersion': '1.0.2-dev',
    'process': {
        'terminal': False,
        'user': {'uid': 1000, 'gid': 1000, 'umask': 18, 'additionalGids': [1000, 10]},
        'args': ['/bin/sh', '-c', 'echo hello; exit 3'],
        'env': ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
                'TERM=xterm', 'container=podman', 'HOME=/root', 'HOSTNAME=c0ffee'],
        'cwd': '/',
        'capabilities': {k: ['CAP_CHOWN', 'CAP_KILL', 'CAP_NET_BIND_SERVICE', 'CAP_SETUID']
                         for k in ('bounding', 'effective', 'permitted')},
        'rlimits': [{'type': 'RLIMIT_NOFILE', 'hard': 1048576, 'soft': 1048576},
                    {'type': 'RLIMIT_NPROC', 'hard': 4194304, 'soft': 4194304}],
        'noNewPrivileges': True,
        'oomScoreAdj': 0,
    },
    'root': {'path': 'rootfs', 'readonly': False},
    'hostname': 'c0ffee',
    'mounts': [
        {'destination': '/proc', 'type': 'proc', 'source': 'proc',
         'options': ['nosuid', 'noexec', 'nodev']},
        {'destination': '/dev', 'type': 'tmpfs', 'source': 'tmpfs',
         'options': ['nosuid', 'strictatime', 'mode=755', 'size=65536k']},
        {'destination': '/sys', 'type': 'sysfs', 'source': 'sysfs',
         'options': ['nosuid', 'noexec', 'nodev', 'ro']},
        {'destination': '/dev/pts', 'type': 'devpts', 'source': 'devpts',
         'options': ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620',
                     'gid=5']},
        {'destination': '/dev/mqueue', 'type': 'mqueue', 'source': 'mqueue',
         'options': ['nosuid', 'noexec', 'nodev']},
        {'destination': '/sys/fs/cgroup', 'type': 'cgroup', 'source': 'cgroup',
         'options': ['rprivate', 'nosuid', 'noexec', 'nodev', 'relatime', 'ro']},
        {'destination': '/dev/shm', 'type': 'bind', 'source': '/dev/shm',
         'options': ['bind', 'private']},
    ],
    'annotations': {'io.container.manager': 'libpod', 'org.opencontainers.image.stopSignal': '15'},
    'linux': {
        'sysctl': {'net.ipv4.ping_group_range': '0 0'},
        'resources': {'devices': [{'allow': False, 'access': 'rwm'}],
                      'memory': {'limit': 268435456, 'swap': -1},
                      'cpu': {'quota': 150000, 'period': 100000, 'cpus': '0-1'},
                      'pids': {'limit': 2048}},
        'cgroupsPath': 'machine.slice:libpod:c0ffee',
        'namespaces': [{'type': 'pid'}, {'type': 'network'}, {'type': 'ipc'},
                       {'type': 'uts'}, {'type': 'mount'}, {'type': 'cgroup'}],
        'devices': [{'path': '/dev/fuse', 'type': 'c', 'major': 10, 'minor': 229,
                     'fileMode': 438, 'uid': 0, 'gid': 0}],
        'seccomp': {'defaultAction': 'SCMP_ACT_ERRNO', 'defaultErrnoRet': 38,
                    'architectures': ['SCMP_ARCH_X86_64'],
                    'syscalls': [{'names': ['read', 'write', 'exit_group'],
                                  'action': 'SCMP_ACT_ALLOW'}]},
        'maskedPaths': ['/proc/acpi', '/proc/kcore', '/proc/keys', '/sys/firmware'],
        'readonlyPaths': ['/proc/asound', '/proc/bus', '/proc/fs', '/proc/sys'],
    },
}


def js(o): return json.dumps(o, indent=1).encode()


write(OC, 'podman_run', js(PODMAN))
MIN = {'ociVersion': '1.0.2', 'process': {'args': ['sh']}, 'root': {'path': 'rootfs'}}
write(OC, 'minimal', json.dumps(MIN).encode())
CTRD = json.loads(json.dumps(MIN))
CTRD['process'].update({'user': {'uid': 0, 'gid': 0}, 'cwd': '/work', 'terminal': True,
                        'consoleSize': {'height': 40, 'width': 120}})
CTRD['root'] = {'path': 'rootfs', 'readonly': True}
CTRD['linux'] = {'namespaces': [{'type': 'network', 'path': '/proc/42/ns/net'}]}
write(OC, 'containerd_netns_path', json.dumps(CTRD).encode())
BAD = json.loads(json.dumps(MIN))
BAD['mounts'] = [{'destination': '/data', 'type': 'bind', 'source': '/', 'options': ['rbind']},
                 {'destination': 'rel', 'type': 'nfs'}]
BAD['process'].update({'cwd': 'relative', 'rlimits': [{'type': 'RLIMIT_BOGUS'}]})
write(OC, 'refusals', json.dumps(BAD).encode())

OS = 'fuzz_oci_state'
write(OS, 'created', json.dumps({
    'ociVersion': '1.0.2', 'id': 'fuzz', 'pid': 4242, 'bundle': '/run/containers/b/userdata',
    'created': '2024-05-01T12:00:00.000000000Z', 'starttime': 123456789,
    'annotations': {'io.container.manager': 'libpod'}}, separators=(',', ':')).encode())
write(OS, 'odd_types', b'{"pid":-1,"starttime":-5,"bundle":"' + b'\xc3\xa9' * 40 +
      b'","created":"' + b'\xe2\x82\xac' * 30 + b'","annotations":[1,2]}')

# ---- fuzz_oci_cli / fuzz_blkd_cli: argv at NUL bytes ---------------------------
OCLI = 'fuzz_oci_cli'
write(OCLI, 'podman_create', argv(
    '--root', '/run/minivmm-oci', '--log', '/run/c/log.json', '--log-format=json',
    '--systemd-cgroup', 'create', '--bundle', '/run/c/userdata', '--pid-file',
    '/run/c/pidfile', '--console-socket', '/tmp/cs.sock', '--preserve-fds=2',
    '--no-new-keyring', 'c0ffee'))
write(OCLI, 'kill_signals', argv('kill', '--all', 'c0ffee', 'SIGRTMIN+3', 'RTMAX-2', '9',
                                 'sigterm', '0-3,8,10-11', '65535-65536'))
write(OCLI, 'errors', argv('--debug', '--log-format', 'xml', 'delete', '-f', '../etc',
                           '.hidden', 'exec', 'x'))
write(OCLI, 'help_features', argv('-v', 'features', 'help', '--kernel=/vmlinuz',
                                  '--initrd', 'x.cpio'))
BCLI = 'fuzz_blkd_cli'
write(BCLI, 'full', u8(4) + argv(
    '--socket', '/run/blkd.sock', '--disk',
    'path=/var/lib/a.img,num-queues=8,queue-size=256,ro=off,serial=disk0,cache=unsafe',
    '--iothreads', '2', '--io-sched', 'batch', '--no-seccomp', '--stats-json', '-vv'))
write(BCLI, 'defaults_one_cpu', u8(1) + argv('--socket=/s', '--disk=path=x'))
write(BCLI, 'errors', u8(0) + argv('--socket', 'x' * 120, '--disk', 'path=a', '--disk',
                                   'path=b', '--iothreads', '9999', '-q', 'extra'))
write(BCLI, 'help', u8(2) + argv('-hV'))

# ---- fuzz_vu_socket: the same messages through a socket, in chunks ---------------
VS = 'fuzz_vu_socket'
S_MSG, S_RAW, S_RECONNECT, S_STOP = range(4)


def vs(op, payload=b'', flags=0, fds=0, mode=0, cuts=(), fd_chunk=0, size=None,
       wire=0, claim=None):
    """cuts: up to 3 cut points (bytes into header + payload); wire: bits 6-7
    of mode (payload short by one, half, 8 past); claim: a raw header size."""
    n = len(payload) if size is None else size
    m = mode | fds | (wire << 6) | (0x20 if claim is not None else 0)
    out = u8(S_MSG) + u8(op) + u8(flags) + u16(n) + u8(m) + \
        u8(len(cuts) | fd_chunk << 2) + payload
    if claim is not None:
        out += u32(claim)
    return out + b''.join(u8(c) for c in cuts)


def vring_up(i, desc, avail, used, num=64):
    return (vs(SET_VRING_NUM, vring(i, num), ACK) +
            vs(SET_VRING_BASE, vring(i, 0), ACK) +
            vs(SET_VRING_ADDR, u32(i) + u32(0) + u64(desc) + u64(used) + u64(avail) +
               u64(0), ACK, mode=FIX) +
            vs(SET_VRING_KICK, u64(i), ACK, fds=1, cuts=(5,)) +
            vs(SET_VRING_CALL, u64(i), ACK, fds=1) +
            vs(SET_VRING_ENABLE, vring(i, 1), ACK))


VS_INIT = (vs(SET_OWNER) + vs(GET_FEATURES) + vs(GET_PROTOCOL_FEATURES) +
           vs(SET_PROTOCOL_FEATURES, u64(0x3209)) + vs(GET_QUEUE_NUM) +
           vs(GET_CONFIG, u32(0) + u32(60) + u32(0) + bytes(60), cuts=(3, 12, 40)) +
           vs(SET_FEATURES, u64(VIRTIO_FEATURES), ACK) +
           vs(SET_MEM_TABLE, mem_table((0, RAM - 1, 0, 0)), ACK, fds=1, mode=FIX))
write(VS, 'qemu_start_stop', u8(0) + VS_INIT +
      vs(GET_INFLIGHT_FD, u64(0) + u64(0) + u16(2) + u16(64) + u32(0), mode=FIX) +
      vring_up(0, 0x1000, 0x2000, 0x3000) +
      vs(GET_VRING_BASE, vring(0, 0)) + vs(RESET_DEVICE, flags=ACK))
write(VS, 'split_headers_reconnect', u8(0) + VS_INIT + u8(S_RECONNECT) +
      vs(GET_FEATURES, cuts=(1, 4, 11)) + vs(SET_OWNER, cuts=(11,)) + u8(S_RECONNECT) +
      VS_INIT + vring_up(1, 0x4000, 0x5000, 0x6000) + u8(S_STOP) + vs(GET_FEATURES))
write(VS, 'ctrunc_and_late_fds', u8(0) + vs(SET_OWNER) +
      vs(SET_MEM_TABLE, mem_table((0, RAM - 1, 0, 0)), ACK, fds=12, mode=FIX) +
      u8(S_RECONNECT) + vs(SET_OWNER) +
      vs(SET_VRING_KICK, u64(0), ACK, fds=1, cuts=(4, 13), fd_chunk=2) +
      u8(S_RECONNECT) + u8(S_RAW) + u8(3) + u8(9) + b'\x01\x00\x00')
write(VS, 'truncated_and_oversized', u8(0) + vs(GET_FEATURES) +
      vs(SET_FEATURES, u64(1 << 32), wire=2) + u8(S_RECONNECT) +
      vs(SET_OWNER, claim=0xffffffff) + u8(S_RECONNECT) +
      vs(GET_CONFIG, u32(0) + u32(60) + u32(0) + bytes(60), claim=300, wire=3) +
      u8(S_RECONNECT) + u8(S_RAW) + u8(7) + u8(0) + b'\x01\x00\x00\x00\x01\x00\x00')

# ---- fuzz_blk_uring: the same requests, the io_uring engine ----------------------
U_KICK, U_RESET, U_QSTOP, U_FAIL, U_CFG = 4, 5, 6, 7, 8
UR = 'fuzz_blk_uring'


def ukick(mode=0): return u8(U_KICK) + u8(mode)  # 0: to the end, 2: a round, 3: none


# setup: queue size 8, bits 2: two queues, bits 5-6: ring entries 4/8/16/64
write(UR, 'rw_flush_small_ring', u64(ALL) + u8(0x02) +
      blk(T_IN, 3, [(0, 0x100), (1, 0x800)]) + ukick() +
      blk(T_OUT, 5, [(0x40, 0x1000), (0x03, 0x3000)]) + blk(T_OUT, 9, [(0, 0x2000)]) +
      blk(T_IN, 5, [(0, 0x4000)], mode=1) + ukick() + blk(T_FLUSH, 0) + ukick())
write(UR, 'in_flight_reset', u64(ALL) + u8(0x66) +
      blk(T_OUT, 1, [(3, 0x100), (3, 0x1100)]) + blk(T_IN, 2, [(2, 0x3000)]) +
      blk(T_DISCARD, 0, [(0, (8, 16, 0))]) + ukick(3) + u8(U_RESET) + u64(ALL) +
      blk(T_IN, 1, [(0, 0x100)]) + u8(QSEL) + u8(1) + blk(T_OUT, 7, [(1, 0x2000)]) +
      ukick(2) + u8(U_RESET) + u64(0) + blk(T_IN, 0, [(0, 0x100)]) + ukick())
write(UR, 'queue_stops', u64(ALL) + u8(0x26) +
      blk(T_OUT, 4, [(3, 0x100)]) + blk(T_IN, 4, [(3, 0x1000)]) + ukick(2) +
      u8(U_QSTOP) + u8(0x00) + blk(T_WZ, 0, [(0, (0, 8, 1))]) + ukick(3) +
      u8(U_QSTOP) + u8(0x10) + blk(T_IN, 1, [(0, 0x100)]) + ukick() +
      u8(U_QSTOP) + u8(0x21))
write(UR, 'sqe_refusals', u64(ALL) + u8(0x02) +
      u8(U_FAIL) + u8(0x31) + blk(T_OUT, 0, [(3, 0x100), (3, 0x900), (3, 0x2100)]) +
      blk(T_IN, 8, [(3, 0x4000)]) + blk(T_FLUSH, 0) + ukick() +
      u8(U_FAIL) + u8(0x70) + blk(T_IN, 0, [(0, 0x100)]) + ukick(2) + ukick())
# Write-through (WCE off): every write and write-zeroes gets its fdatasync.
write(UR, 'write_through', u64(ALL) + u8(0x42) +
      u8(U_CFG) + u8(32) + u8(0x81) + u8(0) +
      blk(T_OUT, 2, [(1, 0x100)]) + blk(T_WZ, 0, [(0, (16, 8, 0))]) + ukick() +
      blk(T_OUT, 127, [(3, 0x1000)]) + ukick(2) + u8(U_QSTOP) + u8(0x00))

# ---- fuzz_pc_ports: the PC's ports, COM1 and its console -----------------------------
PP = 'fuzz_pc_ports'
IO, COAL, HOST_IN, HOST_READ = range(4)
G_COM1, G_KBD_DATA, G_KBD_CMD, G_RTC, G_EXIT, G_ACPI, G_PCI, G_POST = range(8)


def port(g, off): return g + 8 * (off + 2)


def outp(g, off, val, size=1, rep=None, fill=None):
    mode = {1: 0, 2: 1, 4: 2}[size] | 4
    out = u8(IO) + u8(port(g, off))
    if fill is not None:  # (pattern byte, incrementing)
        mode |= 8 | 0x10 | (0x20 if fill[1] else 0)
        return out + u8(mode) + u8(rep - 1) + u8(fill[0])
    if rep is not None:
        mode |= 8
        return out + u8(mode) + u8(len(rep) // size - 1) + rep
    return out + u8(mode) + val.to_bytes(size, 'little')


def inp(g, off, size=1, count=None):
    mode = {1: 0, 2: 1, 4: 2}[size]
    if count:
        return u8(IO) + u8(port(g, off)) + u8(mode | 8) + u8(count - 1)
    return u8(IO) + u8(port(g, off)) + u8(mode)


def host_in(b): return u8(HOST_IN) + u8(len(b)) + b
def host_read(n=255): return u8(HOST_READ) + u8(n)


# Linux's 8250 probe and a getty's traffic, input both ways.
write(PP, 'serial_probe_and_io', u8(0) +
      outp(G_COM1, 1, 0) + inp(G_COM1, 2) + outp(G_COM1, 3, 0x80) + outp(G_COM1, 0, 1) +
      outp(G_COM1, 1, 0) + outp(G_COM1, 3, 0x03) + outp(G_COM1, 2, 0xc7) +
      outp(G_COM1, 4, 0x1b) + inp(G_COM1, 6) + outp(G_COM1, 4, 0x0b) +
      outp(G_COM1, 1, 0x0f) + inp(G_COM1, 2) +
      outp(G_COM1, 0, 0, rep=b'login: ') + host_in(b'root\n') + inp(G_COM1, 5) +
      inp(G_COM1, 0, count=5) + inp(G_COM1, 2) + host_read() +
      outp(G_COM1, 4, 0x10) + outp(G_COM1, 0, 0, rep=b'loop') + inp(G_COM1, 0, count=4) +
      outp(G_COM1, 4, 0x0b) + host_in(b'') + outp(G_COM1, 0, 0x0a) + host_read())
# A guest flooding COM1 at a reader that stops: pipe, then buffer, then drops.
write(PP, 'console_flood_stalled_reader', u8(0) +
      b''.join(outp(G_COM1, 0, 0, rep=64, fill=(0x41 + i, i & 1)) for i in range(20)) +
      host_read(4) + outp(G_COM1, 0, 0, rep=64, fill=(0x7a, 0)) + host_read())
write(PP, 'console_to_memfd', u8(5) +
      outp(G_COM1, 0, 0, rep=b'memfd output\r\n') + outp(G_COM1, 0, 0x43424140, 4) +
      outp(G_COM1, 0, 0, rep=64, fill=(0x30, 1)))
# RTC: read the clock as Linux does, set it with SET, 12-hour BCD.
write(PP, 'rtc_read_and_set', u8(4) +
      outp(G_RTC, 0, 0x0a) + inp(G_RTC, 1) + outp(G_RTC, 0, 0x00) + inp(G_RTC, 1) +
      outp(G_RTC, 0, 0x32) + inp(G_RTC, 1) + outp(G_RTC, 0, 0x0b) + outp(G_RTC, 1, 0x82) +
      outp(G_RTC, 0, 0x09) + outp(G_RTC, 1, 0x99) + outp(G_RTC, 0, 0x08) +
      outp(G_RTC, 1, 0x13) + outp(G_RTC, 0, 0x04) + outp(G_RTC, 1, 0x92) +
      outp(G_RTC, 0, 0x0b) + outp(G_RTC, 1, 0x00) + outp(G_RTC, 0, 0x04) + inp(G_RTC, 1) +
      outp(G_RTC, 0, 0x8d) + inp(G_RTC, 1, 4) + outp(G_RTC, 0, 0x7f, 2) + inp(G_RTC, 1))
# reboot=pci (cf9 2 then 6), with config cycles coalesced around it.
write(PP, 'pci_reset_and_coalesced', u8(4) +
      outp(G_PCI, 0, 0x80000000, 4) + inp(G_PCI, 4, 4) + inp(G_PCI, 1) +
      u8(COAL) + u8(1) + u8(0x02) + u32(0x80000800) + u8(0x04) + u32(0x02) +
      inp(G_PCI, 4, 2) + outp(G_PCI, 1, 0x02) + inp(G_PCI, 1) + inp(G_KBD_CMD, 0) +
      outp(G_PCI, 1, 0x06) + outp(G_KBD_CMD, 0, 0xfe) + outp(G_EXIT, 0, 7, 4))
# ACPI S5 as Linux writes it; the exit port probed and written.
write(PP, 'acpi_poweroff_exit_port', u8(4) +
      inp(G_EXIT, 0, 4) + inp(G_EXIT, 2, 2) + outp(G_ACPI, 0, 0xffff, 2) +
      outp(G_ACPI, 2, 0x0000, 2) + inp(G_ACPI, 4, 2) + outp(G_ACPI, 4, 0x1400, 2) +
      outp(G_ACPI, 5, 0x34) + inp(G_ACPI, 6, 2) + outp(G_EXIT, 0, 0x2a, 2) +
      outp(G_KBD_DATA, 0, 0xff) + outp(G_POST, 0, 0x80))

# ---- fuzz_pci_bus: a bus of fake devices ------------------------------------------
PB = 'fuzz_pci_bus'
B_CFG, B_RAW, B_ECAM, B_SIZE, B_MOVE, B_CMD, B_MMIO = range(7)


def bars(*specs):
    """per BAR: (size exponent 0..23 for 16 << e, 64-bit, prefetch) or None"""
    out = b''
    for sp in specs + (None,) * (6 - len(specs)):
        out += u8(0) if sp is None else u8(0x20 | sp[0] | (0x40 if sp[1] else 0) |
                                        (0x80 if sp[2] else 0))
    return out


def dev(b, caps=()): return b + u8(len(caps)) + b''.join(u8(c) for c in caps)


def pick(i): return u8(i)  # a registered device by index


# setup: bits 0-2 functions per slot - 1, bit 3 foreign range, bit 4 ECAM,
# bits 5-6 window 1 MiB << n, bit 7 a 64-bit window
virtio_like = dev(bars(None, (8, False, False), None, None, (10, True, True)), (14, 20))
nvme_like = dev(bars((10, True, False)), (10,))
write(PB, 'linux_enumeration', u8(0xd2) + u8(5) + virtio_like * 2 + nvme_like * 2 +
      dev(bars((0, False, False), (4, False, True), (23, True, True))) +
      b''.join(u8(B_SIZE) + pick(i % 5) + u8(i) + u8(1) for i in range(12)) +
      b''.join(u8(B_CFG) + pick(i) + u8(0) + u8(2) + u32(0) for i in range(5)) +
      u8(B_MMIO) + pick(0) + u8(1) + u8(2) + u32(0x10) + u8(B_ECAM) + pick(1) + u16(0x100) +
      u8(3) + u64(0))
write(PB, 'bar_moves_overlaps', u8(0x38) + u8(4) + virtio_like * 3 + nvme_like +
      u8(B_MOVE) + pick(1) + u8(1) + u8(1) + u32(0x0100) +
      u8(B_CMD) + pick(0) + u16(0) + u8(B_MOVE) + pick(2) + u8(1) + u8(2) + u32(0) +
      u8(B_CMD) + pick(0) + u16(2) + u8(B_MOVE) + pick(0) + u8(1) + u8(0) + u32(7) +
      u8(B_MOVE) + pick(3) + u8(0) + u8(3) + u32(0xffffffff) + u32(0x10) +
      u8(B_SIZE) + pick(3) + u8(0) + u8(4) + u8(B_MMIO) + pick(2) + u8(1) + u8(7) + u32(5))
write(PB, 'multifunction_raw', u8(0x17) + u8(20) + (virtio_like + nvme_like) * 10 +
      u8(B_RAW) + u8(0) + u8(6) + u32(0x80000a00) + u8(B_RAW) + u8(4) + u8(2) + u32(0) +
      u8(B_RAW) + u8(1) + u8(0) + u32(0) + u8(B_RAW) + u8(1) + u8(4) + u32(0x0e) +
      u8(B_RAW) + u8(2) + u8(1) + u32(0) + u8(B_CFG) + u8(0xf5) + u8(0x09) + u8(0x0e) +
      u8(0) + u32(0) + u8(B_ECAM) + u8(0xf3) + u8(0x11) + u16(0xffc) + u8(3) + u64(0))
