/* SPDX-License-Identifier: MIT */
/*
 * A module's parameters from the kernel command line, as modprobe takes
 * them from /proc/cmdline: the guest init loads the initramfs's modules
 * itself (finit_module()), and the kernel applies `name.param=value`
 * words to built-in code only, so without this a parameter in
 * minivmm-oci.conf's append (virtio_net.napi_tx=0) reached nothing.
 * Split from init.c so that a unit test runs it on the host.
 */
#ifndef MINIVMM_OCI_INIT_MODPARAMS_H
#define MINIVMM_OCI_INIT_MODPARAMS_H

#include <stddef.h>

/*
 * The words of @cmdline of the form MOD.PARAM[=VALUE] for the module file
 * @file (a path or name such as "kernel/drivers/net/virtio_net.ko"; the
 * module's name is its base name up to the first '.', and '-' and '_' are
 * the same in names, as for modprobe), without the "MOD." and joined by
 * spaces, into @out.  Quoted values ("a b") are kept whole, quotes
 * included, as the kernel's own parser does.  Returns 0, or -1 if they do
 * not fit in @len bytes (then @out is "": no parameter is better than a
 * cut one).  Context: the guest init (or a unit test).
 */
int modparams_for(const char *cmdline, const char *file, char *out, size_t len);

#endif
