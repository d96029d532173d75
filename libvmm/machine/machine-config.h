/* SPDX-License-Identifier: MIT */
/*
 * The API's configuration of one VM: what vmm_set_*() and vmm_add_*()
 * record (api.c fills it, under vm->lock, while the VM is VM_CONFIG) and
 * what vmm_start() builds the machine from.  The running VM (struct vmm,
 * core/vm.h) only points at it: nothing below machine/ reads it.
 */
#ifndef VMM_MACHINE_MACHINE_CONFIG_H
#define VMM_MACHINE_MACHINE_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/vmm.h"

/* A disk as configured through vmm_add_disk() (copied strings). */
struct machine_disk_config {
	struct vmm_disk_config cfg; /* path/serial point into the copies below */
	char *path;
	char *serial;
	int fd; /* dup of cfg.fd, or -1 */
	/* Rate limits: cfg.rate_limit's copy, then vmm_set_disk_rate_limit()'s
	 * (cfg.rate_limit itself is NULL: this array moves). */
	struct vmm_rate_limit rate;
};

/* A port as configured through vmm_add_port() (copied name, dup'ed fds). */
struct machine_port_config {
	char *name;
	int in_fd, out_fd; /* -1 when none */
};

/* A NIC as configured through vmm_add_net() (copied name, dup'ed fds). */
struct machine_net_config {
	struct vmm_net_config cfg; /* tap/fds point into the copies below */
	char *tap;
	int *fds;		   /* cfg.nr_fds, or NULL */
	char *stream;		   /* cfg.stream's copy, or NULL */
	struct vmm_rate_limit rate; /* as machine_disk_config's */
	bool link_down;		    /* held down: vmm_set_net_link() */
};

/* A virtio-fs device as configured through vmm_add_fs() (copied strings). */
struct machine_fs_config {
	struct vmm_fs_config cfg; /* tag/socket point into the copies below */
	char *tag;
	char *socket;
};

/* The vsock device of vmm_add_vsock() (copied path). */
struct machine_vsock_config {
	struct vmm_vsock_config cfg; /* socket_path points at path */
	char *path;
};

struct machine_config {
	unsigned int nr_vcpus;
	uint64_t ram_size;
	char *kernel_path, *initrd_path, *cmdline;
	int console_in, console_out;
	struct machine_disk_config *disks;
	unsigned int nr_disks;
	struct machine_port_config *ports; /* vmm_add_port() */
	unsigned int nr_ports;
	int seccomp_mode; /* enum vmm_seccomp_mode */
	vmm_start_hook_fn start_hook; /* vmm_set_start_hook(), or NULL */
	void *start_hook_opaque;
	int iothread_sched; /* enum vmm_iothread_sched */
	int mem_backend; /* enum vmm_memory_backend (= GUEST_MEM_*) */
	struct machine_net_config *nets; /* vmm_add_net() */
	unsigned int nr_nets;
	struct machine_fs_config *fs; /* vmm_add_fs() */
	unsigned int nr_fs;
	struct machine_vsock_config *vsock; /* vmm_add_vsock(), or NULL */
	unsigned int *cpu_affinity; /* vmm_set_cpu_affinity(), or NULL */
	unsigned int nr_cpu_affinity;
};

#endif
