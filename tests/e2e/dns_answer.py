#!/usr/bin/env python3
"""dns_answer.py ADDR PORT NAME IPV4: a one-name DNS server for the e2e tests.

Answers an A query for NAME with IPV4 (TTL 5) and any other query with
NXDOMAIN (AAAA for NAME: no error, no answer), over UDP on ADDR:PORT, until
killed.  Malformed datagrams are dropped.  Used by oci_network.sh so that a
container can resolve a name through the resolv.conf podman wrote, with no
route to any real network.
"""
import socket
import struct
import sys


def qname(msg, off):
    """The question's name (lowercase, dotted) and the offset after it."""
    labels = []
    while True:
        n = msg[off]
        off += 1
        if n == 0:
            return ".".join(labels).lower(), off
        if n & 0xC0:
            raise ValueError("compressed name in a question")
        labels.append(msg[off:off + n].decode("ascii"))
        off += n


def answer(msg, name, addr):
    qid, flags, qd = struct.unpack("!HHH", msg[:6])
    if flags & 0x8000 or qd != 1:
        return None
    q, end = qname(msg, 12)
    qtype, qclass = struct.unpack("!HH", msg[end:end + 4])
    question = msg[12:end + 4]
    rd = flags & 0x0100
    if q != name:
        return struct.pack("!HHHHHH", qid, 0x8400 | rd | 3, 1, 0, 0, 0) + question
    if qtype != 1 or qclass != 1:
        return struct.pack("!HHHHHH", qid, 0x8400 | rd, 1, 0, 0, 0) + question
    rr = struct.pack("!HHHIH", 0xC00C, 1, 1, 5, 4) + socket.inet_aton(addr)
    return struct.pack("!HHHHHH", qid, 0x8400 | rd, 1, 1, 0, 0) + question + rr


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: dns_answer.py ADDR PORT NAME IPV4")
    host, port, name, addr = sys.argv[1], int(sys.argv[2]), sys.argv[3].lower(), sys.argv[4]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((host, port))
    while True:
        msg, peer = s.recvfrom(512)
        try:
            reply = answer(msg, name, addr)
        except (ValueError, IndexError, UnicodeDecodeError, struct.error):
            continue
        if reply:
            s.sendto(reply, peer)


if __name__ == "__main__":
    main()
