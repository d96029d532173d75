/* SPDX-License-Identifier: MIT */
/*
 * Public entry points: argument and lifecycle-state checks, then a call into
 * the module that does the work.  No logic lives here, and nothing here may
 * exit the process.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "machine-config.h"
#include "log.h"
#include "machine-int.h"
#include "machine.h"
#include "plan.h"
#include "sandbox.h"
#include "vcpu.h"
#include "vm.h"
#include "vmm/vmm-bench.h"
#include "rates.h"

#define DEFAULT_RAM (256ull << 20)

/* The disk flags vmm_add_disk() takes: vmm.h's, and in a VMM_BENCH_MODES
 * build the comparison-only ones of vmm-bench.h. */
#ifdef VMM_BENCH_MODES
#define DISK_FLAGS_BENCH VMM_DISK_BENCH_FLAGS
#else
#define DISK_FLAGS_BENCH 0u
#endif
#define DISK_FLAGS (VMM_DISK_READONLY | VMM_DISK_DIRECT | VMM_DISK_NO_FLUSH | \
		    VMM_DISK_NO_LOCK | DISK_FLAGS_BENCH)
#define VIRTQ_MAX_QUEUE_SIZE 1024u

int vmm_get_version(int *major, int *minor)
{
	if (major)
		*major = VMM_VERSION_MAJOR;
	if (minor)
		*minor = VMM_VERSION_MINOR;
	return 0;
}

const char *vmm_exit_reason_str(int reason)
{
	static const char *const names[] = {
		[VMM_EXIT_NONE] = "running",
		[VMM_EXIT_GUEST_RESET] = "guest reset",
		[VMM_EXIT_TRIPLE_FAULT] = "triple fault",
		[VMM_EXIT_STOPPED] = "stopped",
		[VMM_EXIT_ERROR] = "error",
		[VMM_EXIT_GUEST_STATUS] = "guest exit status",
		[VMM_EXIT_POWEROFF] = "guest power-off",
	};

	if (reason < 0 || (size_t)reason >= sizeof(names) / sizeof(names[0]))
		return "unknown";
	return names[reason];
}

static int vm_create_kvm_vm(struct vmm *vm)
{
	vm->vm_fd = ioctl(vm->kvm.fd, KVM_CREATE_VM, 0);
	if (vm->vm_fd < 0) {
		int err = errno;

		vmm_err("KVM_CREATE_VM: %s", strerror(err));
		return err == ENOMEM ? -ENOMEM : -EIO;
	}
	return 0;
}

/* Free the configuration and what it holds (copied strings, dup'ed fds). */
static void config_free(struct machine_config *c)
{
	if (!c)
		return;
	free(c->kernel_path);
	free(c->initrd_path);
	free(c->cmdline);
	free(c->cpu_affinity);
	for (unsigned int i = 0; i < c->nr_disks; i++) {
		free(c->disks[i].path);
		free(c->disks[i].serial);
		if (c->disks[i].fd >= 0)
			close(c->disks[i].fd);
	}
	free(c->disks);
	for (unsigned int i = 0; i < c->nr_ports; i++) {
		free(c->ports[i].name);
		if (c->ports[i].in_fd >= 0)
			close(c->ports[i].in_fd);
		if (c->ports[i].out_fd >= 0)
			close(c->ports[i].out_fd);
	}
	free(c->ports);
	for (unsigned int i = 0; i < c->nr_nets; i++) {
		free(c->nets[i].tap);
		free(c->nets[i].stream);
		for (unsigned int f = 0; c->nets[i].fds && f < c->nets[i].cfg.nr_fds; f++)
			close(c->nets[i].fds[f]);
		free(c->nets[i].fds);
	}
	free(c->nets);
	for (unsigned int i = 0; i < c->nr_fs; i++) {
		free(c->fs[i].tag);
		free(c->fs[i].socket);
	}
	free(c->fs);
	if (c->vsock)
		free(c->vsock->path);
	free(c->vsock);
	free(c);
}

int vmm_create(struct vmm **out)
{
	struct vmm *vm;
	int ret;

	if (!out)
		return -EINVAL;
	/* The log sink's way to stderr as it is now (the embedder may have
	 * redirected it since the last VM). */
	log_prepare_stderr();
	vm = calloc(1, sizeof(*vm));
	if (!vm)
		return -ENOMEM;
	vm->config = calloc(1, sizeof(*vm->config));
	if (!vm->config) {
		free(vm);
		return -ENOMEM;
	}
	vm->vm_fd = -1;
	vm->exit_efd = -1;
	vm->config->nr_vcpus = 1;
	vm->config->ram_size = DEFAULT_RAM;
	vm->config->console_in = 0;
	vm->config->console_out = 1;
	pthread_mutex_init(&vm->lock, NULL);
	pthread_mutex_init(&vm->join_lock, NULL);
	pthread_mutex_init(&vm->coalesced_lock, NULL);
	vm_pause_init(vm);

	{
		size_t n;
		const struct kvm_cap_name *caps = machine_arch_kvm_caps(&n);

		ret = kvm_sys_open(&vm->kvm, caps, n);
	}
	if (ret)
		goto err;
	ret = vm_create_kvm_vm(vm);
	if (ret)
		goto err;
	vm->exit_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (vm->exit_efd < 0) {
		ret = -errno;
		goto err;
	}
	ret = iobus_init(&vm->pio, "pio");
	if (ret)
		goto err;
	ret = iobus_init(&vm->mmio, "mmio");
	if (ret) {
		iobus_destroy(&vm->pio);
		goto err;
	}
	*out = vm;
	return 0;
err:
	if (vm->exit_efd >= 0)
		close(vm->exit_efd);
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	kvm_sys_close(&vm->kvm);
	pthread_mutex_destroy(&vm->lock);
	pthread_mutex_destroy(&vm->join_lock);
	pthread_mutex_destroy(&vm->coalesced_lock);
	vm_pause_destroy(vm);
	config_free(vm->config);
	free(vm);
	return ret;
}

void vmm_destroy(struct vmm *vm)
{
	if (!vm)
		return;
	if (vm->state == VM_RUNNING) {
		vcpu_stop_all(vm, VMM_EXIT_STOPPED);
		machine_join(vm);
	}
	machine_destroy(vm);
	iobus_destroy(&vm->mmio);
	iobus_destroy(&vm->pio);
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	kvm_sys_close(&vm->kvm);
	if (vm->exit_efd >= 0)
		close(vm->exit_efd);
	config_free(vm->config);
	pthread_mutex_destroy(&vm->lock);
	pthread_mutex_destroy(&vm->join_lock);
	pthread_mutex_destroy(&vm->coalesced_lock);
	vm_pause_destroy(vm);
	free(vm);
}

/* Lock @vm and check it is configurable; returns 0 with the lock held. */
static int vm_lock_config(struct vmm *vm)
{
	if (!vm)
		return -EINVAL;
	pthread_mutex_lock(&vm->lock);
	if (vm->state != VM_CONFIG) {
		pthread_mutex_unlock(&vm->lock);
		return -EBUSY;
	}
	return 0;
}

int vmm_set_vcpus(struct vmm *vm, unsigned int nr_vcpus)
{
	int ret = vm_lock_config(vm);

	if (ret)
		return ret;
	if (nr_vcpus < 1 || nr_vcpus > VMM_MAX_VCPUS ||
	    (int)nr_vcpus > vm->kvm.max_vcpus) {
		vmm_err("%u vCPUs requested; this host allows 1..%d", nr_vcpus,
			MIN(VMM_MAX_VCPUS, vm->kvm.max_vcpus));
		ret = -EINVAL;
	} else {
		vm->config->nr_vcpus = nr_vcpus;
	}
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

int vmm_set_memory(struct vmm *vm, uint64_t ram_bytes)
{
	int ret = vm_lock_config(vm);

	if (ret)
		return ret;
	/* Upper bound: 1 TiB keeps every derived address well inside the
	 * 46-bit physical space of KVM's guests and the e820 arithmetic. */
	if (ram_bytes < VMM_MIN_MEMORY || ram_bytes > (1ull << 40) ||
	    (ram_bytes & 0xfff))
		ret = -EINVAL;
	else
		vm->config->ram_size = ram_bytes;
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

/*
 * pci_full() - whether another device would not fit on the PCI bus: the
 * disks, NICs, fs devices and the vsock take one function each, at most
 * VMM_MAX_DISKS in all (the ports' virtio-console function is kept apart).
 * Logs which kind @what was refused.
 */
static bool pci_full(const struct machine_config *c, const char *what)
{
	unsigned int used = c->nr_disks + c->nr_nets + c->nr_fs + !!c->vsock;

	if (used < VMM_MAX_DISKS)
		return false;
	vmm_err("%s: the PCI bus is full: at most %d disks, NICs, fs and vsock "
		"devices together", what, VMM_MAX_DISKS);
	return true;
}

static int dup_str(const char *s, char **out)
{
	*out = NULL;
	if (!s)
		return 0;
	*out = strdup(s);
	return *out ? 0 : -ENOMEM;
}

int vmm_set_kernel(struct vmm *vm, const char *kernel, const char *initrd,
		   const char *cmdline)
{
	char *k = NULL, *i = NULL, *c = NULL;
	int ret;

	if (!kernel || (cmdline && strlen(cmdline) > VMM_MAX_CMDLINE))
		return -EINVAL;
	ret = vm_lock_config(vm);
	if (ret)
		return ret;
	if (dup_str(kernel, &k) || dup_str(initrd, &i) ||
	    dup_str(cmdline ? cmdline : "", &c)) {
		free(k);
		free(i);
		free(c);
		pthread_mutex_unlock(&vm->lock);
		return -ENOMEM;
	}
	free(vm->config->kernel_path);
	free(vm->config->initrd_path);
	free(vm->config->cmdline);
	vm->config->kernel_path = k;
	vm->config->initrd_path = i;
	vm->config->cmdline = c;
	pthread_mutex_unlock(&vm->lock);
	return 0;
}

int vmm_set_console(struct vmm *vm, int in_fd, int out_fd)
{
	int ret;

	if (in_fd < -1 || out_fd < -1)
		return -EINVAL;
	ret = vm_lock_config(vm);
	if (ret)
		return ret;
	vm->config->console_in = in_fd;
	vm->config->console_out = out_fd;
	pthread_mutex_unlock(&vm->lock);
	return 0;
}

/* The first published struct vmm_console_stats (callers built against it
 * keep working when fields are appended). */
#define CONSOLE_STATS_V1_SIZE 32u
_Static_assert(sizeof(struct vmm_console_stats) >= CONSOLE_STATS_V1_SIZE,
	       "struct vmm_console_stats shrank");

int vmm_get_console_stats(struct vmm *vm, struct vmm_console_stats *st)
{
	struct vmm_console_stats all = { 0 };
	uint32_t sz;

	if (!vm || !st || st->struct_size < CONSOLE_STATS_V1_SIZE)
		return -EINVAL;
	sz = st->struct_size;
	pthread_mutex_lock(&vm->lock);
	machine_console_stats(vm, &all);
	pthread_mutex_unlock(&vm->lock);
	all.struct_size = sz;
	memcpy(st, &all, MIN((size_t)sz, sizeof(all)));
	return 0;
}

int vmm_add_disk(struct vmm *vm, const struct vmm_disk_config *cfg,
		 unsigned int *out_id)
{
	struct machine_disk_config d = { .fd = -1 }, *n;
	uint16_t qs;
	int ret;

	if (!cfg || cfg->struct_size < offsetof(struct vmm_disk_config, poll_us) ||
	    (!cfg->path && cfg->fd < 0) ||
	    (cfg->flags & ~DISK_FLAGS) ||
	    (cfg->serial && strlen(cfg->serial) > 20))
		return -EINVAL;
	qs = cfg->queue_size;
	if (qs && (qs < 4 || qs > VIRTQ_MAX_QUEUE_SIZE || (qs & (qs - 1))))
		return -EINVAL;
	if (cfg->num_queues > VMM_MAX_DISK_QUEUES) {
		vmm_err("disk: num_queues %u is above the maximum, %d",
			cfg->num_queues, VMM_MAX_DISK_QUEUES);
		return -EINVAL;
	}
	ret = vm_lock_config(vm);
	if (ret)
		return ret;
	/* Fields past what the caller's struct has stay zero (defaults). */
	memcpy(&d.cfg, cfg, MIN((size_t)cfg->struct_size, sizeof(d.cfg)));
	d.cfg.struct_size = sizeof(d.cfg);
	/* Rate limits: copied (rates.c); the pointer is not kept. */
	if (machine_rate_in(d.cfg.rate_limit, &d.rate)) {
		ret = -EINVAL;
		goto out;
	}
	d.cfg.rate_limit = NULL;
	if (pci_full(vm->config, "disk")) {
		ret = -ENOSPC;
		goto out;
	}
	/* Every queue gets a KVM MSI route; a default count is lowered at
	 * vmm_start() to fit, down to 1 (plan.c). */
	ret = plan_check_new_disk(vm->config, d.cfg.num_queues);
	if (ret)
		goto out;
	if (dup_str(cfg->path, &d.path) || dup_str(cfg->serial, &d.serial)) {
		ret = -ENOMEM;
		goto err;
	}
	if (!cfg->path) {
		d.fd = fcntl(cfg->fd, F_DUPFD_CLOEXEC, 0);
		if (d.fd < 0) {
			ret = -EBADF;
			goto err;
		}
	}
	d.cfg.path = d.path;
	d.cfg.serial = d.serial;
	d.cfg.fd = d.fd;
	n = realloc(vm->config->disks, (vm->config->nr_disks + 1) * sizeof(*n));
	if (!n) {
		ret = -ENOMEM;
		goto err;
	}
	vm->config->disks = n;
	vm->config->disks[vm->config->nr_disks] = d;
	if (out_id)
		*out_id = vm->config->nr_disks;
	vm->config->nr_disks++;
	goto out;
err:
	free(d.path);
	free(d.serial);
	if (d.fd >= 0)
		close(d.fd);
out:
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

/* @cfg as this library's struct: what the caller's struct_size covers,
 * zero past it (an older caller has no stream field).  -EINVAL: too
 * small. */
static int net_config_in(const struct vmm_net_config *cfg,
			 struct vmm_net_config *c)
{
	if (cfg->struct_size < offsetof(struct vmm_net_config, mtu) + sizeof(c->mtu))
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	memcpy(c, cfg, MIN((size_t)cfg->struct_size, sizeof(*c)));
	return 0;
}

/* The stream back end's checks: one of a path or sockets as @fds. */
static bool net_stream_ok(const struct vmm_net_config *c)
{
	if ((c->flags & VMM_NET_STREAM) && !c->fds)
		return false;
	if (!c->stream)
		return true;
	return !c->tap && !c->fds && c->stream[0] && strlen(c->stream) < 108 &&
	       c->queue_pairs <= 1;
}

/* vmm_add_net()'s argument checks (vmm.h). */
static bool net_config_ok(const struct vmm_net_config *c)
{
	uint16_t qs = c->queue_size;
	static const uint8_t zero[6];

	if ((c->flags & ~(VMM_NET_VHOST | VMM_NET_STREAM)) || !net_stream_ok(c) ||
	    (!c->stream && !c->tap == !c->fds) ||
	    /* vhost-net needs taps: not a stream socket */
	    ((c->flags & VMM_NET_VHOST) && (c->stream || (c->flags & VMM_NET_STREAM))) ||
	    (c->tap && (!c->tap[0] || strlen(c->tap) >= 16)) ||
	    (c->fds && (!c->nr_fds || c->nr_fds > VMM_MAX_NET_PAIRS ||
			(c->queue_pairs && c->queue_pairs != c->nr_fds))) ||
	    c->queue_pairs > VMM_MAX_NET_PAIRS ||
	    (memcmp(c->mac, zero, 6) && (c->mac[0] & 1)) ||
	    (c->mtu && c->mtu < 68))
		return false;
	return !qs || (qs >= 4 && qs <= VIRTQ_MAX_QUEUE_SIZE && !(qs & (qs - 1)));
}

/* Copy @cfg's strings and fds into @n.  0, -EBADF or -ENOMEM. */
static int net_config_copy(const struct vmm_net_config *cfg,
			   struct machine_net_config *n)
{
	memcpy(&n->cfg, cfg, sizeof(n->cfg));
	if (dup_str(cfg->tap, &n->tap) || dup_str(cfg->stream, &n->stream))
		return -ENOMEM;
	n->cfg.tap = n->tap;
	n->cfg.stream = n->stream;
	if (!cfg->fds)
		return 0;
	n->fds = malloc(cfg->nr_fds * sizeof(*n->fds));
	if (!n->fds)
		return -ENOMEM;
	for (unsigned int i = 0; i < cfg->nr_fds; i++) {
		n->fds[i] = fcntl(cfg->fds[i], F_DUPFD_CLOEXEC, 0);
		if (n->fds[i] < 0) {
			while (i--)
				close(n->fds[i]);
			free(n->fds);
			n->fds = NULL;
			return -EBADF;
		}
	}
	n->cfg.fds = n->fds;
	return 0;
}

int vmm_add_net(struct vmm *vm, const struct vmm_net_config *cfg,
		unsigned int *out_id)
{
	struct machine_net_config n = { 0 }, *a;
	struct vmm_net_config c;
	int ret;

	if (!cfg || net_config_in(cfg, &c) || !net_config_ok(&c) ||
	    machine_rate_in(c.rate_limit, &n.rate) ||
	    /* vhost-net moves the frames in the kernel: nothing to limit */
	    ((c.flags & VMM_NET_VHOST) && machine_rate_any(&n.rate)))
		return -EINVAL;
	c.rate_limit = NULL;
	cfg = &c;
	ret = vm_lock_config(vm);
	if (ret)
		return ret;
	if (vm->config->nr_nets >= VMM_MAX_NETS) {
		vmm_err("net: at most %d NICs", VMM_MAX_NETS);
		ret = -ENOSPC;
		goto out;
	}
	if (pci_full(vm->config, "net")) {
		ret = -ENOSPC;
		goto out;
	}
	ret = net_config_copy(cfg, &n);
	a = ret ? NULL : realloc(vm->config->nets, (vm->config->nr_nets + 1) * sizeof(*a));
	if (!a) {
		free(n.tap);
		free(n.stream);
		for (unsigned int i = 0; n.fds && i < cfg->nr_fds; i++)
			close(n.fds[i]);
		free(n.fds);
		ret = ret ? ret : -ENOMEM;
		goto out;
	}
	n.cfg.struct_size = sizeof(n.cfg);
	vm->config->nets = a;
	vm->config->nets[vm->config->nr_nets] = n;
	if (out_id)
		*out_id = vm->config->nr_nets;
	vm->config->nr_nets++;
out:
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

int vmm_get_net_stats(struct vmm *vm, unsigned int id, unsigned int pair,
		      struct vmm_net_pair_stats *st)
{
	int ret;

	if (!vm || !st)
		return -EINVAL;
	pthread_mutex_lock(&vm->lock);
	ret = id < vm->config->nr_nets ? machine_net_stats(vm, id, pair, st) : -ENOENT;
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

int vmm_set_net_link(struct vmm *vm, unsigned int id, int up)
{
	int ret;

	if (!vm)
		return -EINVAL;
	pthread_mutex_lock(&vm->lock);
	ret = id < vm->config->nr_nets ? machine_net_set_link(vm, id, up != 0) : -ENOENT;
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

int vmm_get_net_link(struct vmm *vm, unsigned int id)
{
	int ret;

	if (!vm)
		return -EINVAL;
	pthread_mutex_lock(&vm->lock);
	ret = id < vm->config->nr_nets ? machine_net_link(vm, id) : -ENOENT;
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

/* The first published layouts (include/vmm/vmm.h): what an old caller's
 * struct_size says. */
_Static_assert(offsetof(struct vmm_disk_stats, doorbells) ==
		       VMM_DISK_STATS_SIZE_VER0,
	       "VMM_DISK_STATS_SIZE_VER0 is the published layout");
_Static_assert(offsetof(struct vmm_kvm_stats, signal_exits) + sizeof(uint64_t) ==
		       VMM_KVM_STATS_SIZE_VER0,
	       "VMM_KVM_STATS_SIZE_VER0 is the published layout");

/*
 * An extensible output struct (vmm.h): the caller's struct_size is at
 * least @min; fill what fits in both, say so in struct_size.  @full is the
 * library's complete struct, whose first member is its struct_size.
 */
static void copy_out_stats(void *dst, uint32_t dst_size, void *full,
			   uint32_t full_size)
{
	uint32_t n = MIN(dst_size, full_size);

	memcpy(full, &n, sizeof(n));
	memcpy(dst, full, n);
}

int vmm_get_disk_stats(struct vmm *vm, unsigned int id, struct vmm_disk_stats *st)
{
	struct vmm_disk_stats full;
	int ret;

	if (!vm || !st || st->struct_size < VMM_DISK_STATS_SIZE_VER0)
		return -EINVAL;
	pthread_mutex_lock(&vm->lock);
	if (id >= vm->config->nr_disks) {
		pthread_mutex_unlock(&vm->lock);
		return -ENOENT;
	}
	memset(&full, 0, sizeof(full));
	ret = machine_disk_stats(vm, id, &full);
	pthread_mutex_unlock(&vm->lock);
	if (!ret)
		copy_out_stats(st, st->struct_size, &full, sizeof(full));
	return ret;
}

int vmm_get_queue_stats(struct vmm *vm, unsigned int id, unsigned int q,
			struct vmm_queue_stats *st)
{
	int ret;

	if (!vm || !st)
		return -EINVAL;
	pthread_mutex_lock(&vm->lock);
	ret = id < vm->config->nr_disks ? machine_queue_stats(vm, id, q, st) : -ENOENT;
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

int vmm_get_kvm_stats(struct vmm *vm, struct vmm_kvm_stats *st)
{
	struct vmm_kvm_stats full;
	int ret;

	if (!vm || !st || st->struct_size < VMM_KVM_STATS_SIZE_VER0)
		return -EINVAL;
	pthread_mutex_lock(&vm->lock);
	memset(&full, 0, sizeof(full));
	ret = vm->state == VM_CONFIG ? -EBUSY : machine_kvm_stats(vm, &full);
	pthread_mutex_unlock(&vm->lock);
	if (!ret)
		copy_out_stats(st, st->struct_size, &full, sizeof(full));
	return ret;
}

/* The smallest struct vmm_iothread_stats taken: through sched_switches
 * (the header's ">= 48"). */
#define IOTHREAD_STATS_MIN_SIZE 48u
_Static_assert(offsetof(struct vmm_iothread_stats, sched_normal_ns) ==
		       IOTHREAD_STATS_MIN_SIZE,
	       "IOTHREAD_STATS_MIN_SIZE ends at sched_switches");

int vmm_get_iothread_stats(struct vmm *vm, unsigned int index,
			   struct vmm_iothread_stats *st)
{
	struct vmm_iothread_stats full;
	int ret;

	if (!vm || !st || st->struct_size < IOTHREAD_STATS_MIN_SIZE)
		return -EINVAL;
	pthread_mutex_lock(&vm->lock);
	memset(&full, 0, sizeof(full));
	ret = machine_iothread_stats(vm, index, &full);
	pthread_mutex_unlock(&vm->lock);
	if (!ret)
		copy_out_stats(st, st->struct_size, &full, sizeof(full));
	return ret;
}

int vmm_start(struct vmm *vm)
{
	int ret = vm_lock_config(vm);

	if (ret)
		return ret;
	if (!vm->config->kernel_path) {
		vmm_err("no kernel set (vmm_set_kernel)");
		ret = -EINVAL;
		goto out;
	}
	ret = machine_start(vm);
	if (ret) {
		/* Nothing of the failed build may leak into a retry: KVM state
		 * (irqchip, memslots, vCPUs) lives in the VM fd, so start over
		 * with a fresh one. */
		uint64_t cnt;

		close(vm->vm_fd);
		vm->vm_fd = -1;
		if (vm_create_kvm_vm(vm))
			vmm_err("could not recreate the KVM VM after a failed start");
		vm->exit_reason = VMM_EXIT_NONE;
		vm->stopping = false;
		if (read(vm->exit_efd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
			vmm_warn("draining the exit eventfd: %s", strerror(errno));
		goto out;
	}
	/* Release pairs with the acquire load in vmm_stop(). */
	__atomic_store_n(&vm->state, VM_RUNNING, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

int vmm_stop(struct vmm *vm)
{
	if (!vm)
		return -EINVAL;
	/* No lock: vmm_wait() may hold it while joining, and stopping must
	 * still get through.  Pairs with the release store in vmm_start(). */
	if (__atomic_load_n(&vm->state, __ATOMIC_ACQUIRE) == VM_CONFIG)
		return -EBUSY;
	vcpu_stop_all(vm, VMM_EXIT_STOPPED);
	return 0;
}

int vmm_wait(struct vmm *vm, int *exit_reason)
{
	enum vm_state st;

	if (!vm)
		return -EINVAL;
	pthread_mutex_lock(&vm->lock);
	st = vm->state;
	pthread_mutex_unlock(&vm->lock);
	if (st == VM_CONFIG)
		return -EBUSY;
	/* join_lock serialises concurrent waiters; vm->lock is not held
	 * while joining, so stats and vmm_stop() stay usable meanwhile. */
	pthread_mutex_lock(&vm->join_lock);
	if (st == VM_RUNNING && vm->state == VM_RUNNING) {
		/* Every vCPU thread ends once the VM is stopping; joining
		 * them (then draining the disks) is the wait. */
		machine_join(vm);
		pthread_mutex_lock(&vm->lock);
		vm->state = VM_STOPPED;
		pthread_mutex_unlock(&vm->lock);
	}
	pthread_mutex_unlock(&vm->join_lock);
	if (exit_reason)
		*exit_reason = __atomic_load_n(&vm->exit_reason, __ATOMIC_ACQUIRE);
	return 0;
}

static int dup_port_fd(int fd, int *out)
{
	*out = -1;
	if (fd < 0)
		return 0;
	*out = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	return *out < 0 ? -EBADF : 0;
}

int vmm_add_port(struct vmm *vm, const struct vmm_port_config *cfg,
		 unsigned int *out_id)
{
	struct machine_port_config p = { .in_fd = -1, .out_fd = -1 }, *n;
	int ret;

	if (!cfg || cfg->struct_size < offsetof(struct vmm_port_config, out_fd) +
					       sizeof(cfg->out_fd) ||
	    cfg->flags || !cfg->name || !*cfg->name ||
	    strlen(cfg->name) > VMM_PORT_NAME_MAX || cfg->in_fd < -1 ||
	    cfg->out_fd < -1)
		return -EINVAL;
	ret = vm_lock_config(vm);
	if (ret)
		return ret;
	for (unsigned int i = 0; i < vm->config->nr_ports; i++)
		if (!strcmp(vm->config->ports[i].name, cfg->name)) {
			ret = -EINVAL;
			goto out;
		}
	if (vm->config->nr_ports >= VMM_MAX_PORTS) {
		ret = -ENOSPC;
		goto out;
	}
	if (dup_str(cfg->name, &p.name)) {
		ret = -ENOMEM;
		goto err;
	}
	if ((ret = dup_port_fd(cfg->in_fd, &p.in_fd)) ||
	    (ret = dup_port_fd(cfg->out_fd, &p.out_fd)))
		goto err;
	n = realloc(vm->config->ports, (vm->config->nr_ports + 1) * sizeof(*n));
	if (!n) {
		ret = -ENOMEM;
		goto err;
	}
	vm->config->ports = n;
	vm->config->ports[vm->config->nr_ports] = p;
	if (out_id)
		*out_id = vm->config->nr_ports;
	vm->config->nr_ports++;
	goto out;
err:
	free(p.name);
	if (p.in_fd >= 0)
		close(p.in_fd);
	if (p.out_fd >= 0)
		close(p.out_fd);
out:
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

int vmm_get_guest_status(struct vmm *vm, uint32_t *status)
{
	if (!vm || !status)
		return -EINVAL;
	/* Acquire: pairs with the compare-and-swap in vm_set_exit(), which
	 * machine.c's exit-port handler makes (vcpu_stop_all()) after
	 * storing guest_status. */
	if (__atomic_load_n(&vm->exit_reason, __ATOMIC_ACQUIRE) !=
	    VMM_EXIT_GUEST_STATUS)
		return -ENODATA;
	*status = vm->guest_status;
	return 0;
}

int vmm_get_exit_eventfd(struct vmm *vm)
{
	return vm ? vm->exit_efd : -EINVAL;
}

int vmm_set_seccomp(struct vmm *vm, int mode)
{
	int ret = vm_lock_config(vm);

	if (ret)
		return ret;
	if (mode != VMM_SECCOMP_OFF && mode != VMM_SECCOMP_KILL &&
	    mode != VMM_SECCOMP_ERRNO)
		ret = -EINVAL;
	else
		vm->config->seccomp_mode = mode;
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

int vmm_set_memory_backend(struct vmm *vm, int backend)
{
	int ret = vm_lock_config(vm);

	if (ret)
		return ret;
	if (backend != VMM_MEMORY_ANON && backend != VMM_MEMORY_MEMFD &&
	    backend != VMM_MEMORY_HUGETLB)
		ret = -EINVAL;
	else if (backend == VMM_MEMORY_ANON && vm->config->nr_fs) {
		vmm_err("memory backend: a virtio-fs device needs shareable RAM");
		ret = -EINVAL;
	}
	else
		vm->config->mem_backend = backend;
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

int vmm_set_iothread_sched(struct vmm *vm, int sched)
{
	int ret = vm_lock_config(vm);

	if (ret)
		return ret;
	if (sched != VMM_IOTHREAD_SCHED_BATCH &&
	    sched != VMM_IOTHREAD_SCHED_NORMAL &&
	    sched != VMM_IOTHREAD_SCHED_ADAPTIVE)
		ret = -EINVAL;
	else
		vm->config->iothread_sched = sched;
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

int vmm_seccomp_confine_current_thread(struct vmm *vm)
{
	int ret;

	if (!vm)
		return -EINVAL;
	pthread_mutex_lock(&vm->lock);
	if (vm->state == VM_CONFIG)
		ret = -EBUSY;
	else if (vm->config->seccomp_mode == VMM_SECCOMP_OFF || !vm->seccomp)
		ret = -EINVAL;
	else
		ret = sandbox_install(vm->seccomp, SANDBOX_CLASS_CONTROL);
	pthread_mutex_unlock(&vm->lock);
	if (ret && ret != -EBUSY && ret != -EINVAL)
		vmm_err("seccomp: cannot confine the calling thread: %s",
			strerror(-ret));
	return ret;
}

int vmm_set_start_hook(struct vmm *vm, vmm_start_hook_fn fn, void *opaque)
{
	int ret = vm_lock_config(vm);

	if (ret)
		return ret;
	vm->config->start_hook = fn;
	vm->config->start_hook_opaque = opaque;
	pthread_mutex_unlock(&vm->lock);
	return 0;
}

/* ---- virtio-fs (vmm_add_fs()) ------------------------------------------- */

/* vmm_add_fs()'s checks of @cfg alone: 0 or -EINVAL (logged). */
static int fs_check_config(const struct vmm_fs_config *cfg)
{
	uint16_t qs = cfg->queue_size;

	if (cfg->struct_size < offsetof(struct vmm_fs_config, timeout_ms) +
				       sizeof(cfg->timeout_ms) ||
	    cfg->flags || !cfg->tag || !*cfg->tag || !cfg->socket ||
	    !*cfg->socket) {
		vmm_err("fs: a tag and a socket are required");
		return -EINVAL;
	}
	if (strlen(cfg->tag) > VMM_FS_TAG_MAX ||
	    cfg->num_queues > VMM_MAX_FS_QUEUES ||
	    (qs && (qs < 4 || qs > VIRTQ_MAX_QUEUE_SIZE || (qs & (qs - 1))))) {
		vmm_err("fs: tag over %d bytes, over %d request queues or a "
			"queue size not a power of two in 4..1024", VMM_FS_TAG_MAX,
			VMM_MAX_FS_QUEUES);
		return -EINVAL;
	}
	return 0;
}

/* vmm_add_fs()'s checks against the VM: 0, -EINVAL or -ENOSPC (logged).
 * Context: vm->lock held. */
static int fs_check_vm(const struct machine_config *c, const char *tag)
{
	if (c->mem_backend == VMM_MEMORY_ANON) {
		vmm_err("fs %s: the vhost-user back end maps guest RAM, which "
			"must be shareable: vmm_set_memory_backend() MEMFD or "
			"HUGETLB first", tag);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < c->nr_fs; i++)
		if (!strcmp(c->fs[i].tag, tag)) {
			vmm_err("fs: tag %s used twice", tag);
			return -EINVAL;
		}
	if (c->nr_fs >= VMM_MAX_FS) {
		vmm_err("fs: at most %d devices", VMM_MAX_FS);
		return -ENOSPC;
	}
	if (pci_full(c, "fs"))
		return -ENOSPC;
	return 0;
}

int vmm_add_fs(struct vmm *vm, const struct vmm_fs_config *cfg,
	       unsigned int *out_id)
{
	struct machine_fs_config f = { 0 }, *n;
	int ret;

	if (!cfg || fs_check_config(cfg))
		return -EINVAL;
	ret = vm_lock_config(vm);
	if (ret)
		return ret;
	ret = fs_check_vm(vm->config, cfg->tag);
	if (ret)
		goto out;
	memcpy(&f.cfg, cfg, MIN((size_t)cfg->struct_size, sizeof(f.cfg)));
	f.cfg.struct_size = sizeof(f.cfg);
	n = realloc(vm->config->fs, (vm->config->nr_fs + 1) * sizeof(*n));
	if (n)
		vm->config->fs = n;
	if (!n || dup_str(cfg->tag, &f.tag) || dup_str(cfg->socket, &f.socket)) {
		free(f.tag);
		ret = -ENOMEM;
		goto out;
	}
	f.cfg.tag = f.tag;
	f.cfg.socket = f.socket;
	vm->config->fs[vm->config->nr_fs] = f;
	if (out_id)
		*out_id = vm->config->nr_fs;
	vm->config->nr_fs++;
out:
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

int vmm_get_fs_stats(struct vmm *vm, unsigned int id, struct vmm_fs_stats *st)
{
	struct vmm_fs_stats full;

	if (!vm || !st || st->struct_size < 16)
		return -EINVAL;
	pthread_mutex_lock(&vm->lock);
	if (id >= vm->config->nr_fs) {
		pthread_mutex_unlock(&vm->lock);
		return -ENOENT;
	}
	memset(&full, 0, sizeof(full));
	machine_fs_stats(vm, id, &full);
	pthread_mutex_unlock(&vm->lock);
	copy_out_stats(st, st->struct_size, &full, sizeof(full));
	return 0;
}

/* ---- vsock ---- */

_Static_assert(offsetof(struct vmm_vsock_stats, interrupts) + sizeof(uint64_t) ==
		       VMM_VSOCK_STATS_SIZE_VER0,
	       "VMM_VSOCK_STATS_SIZE_VER0 moved");

int vmm_add_vsock(struct vmm *vm, const struct vmm_vsock_config *cfg)
{
	struct machine_vsock_config *v;
	int ret;

	if (!cfg || cfg->struct_size < offsetof(struct vmm_vsock_config, socket_path) +
					       sizeof(cfg->socket_path) ||
	    (cfg->flags & ~VMM_VSOCK_VHOST) || cfg->guest_cid < 3 ||
	    cfg->guest_cid > 0xfffffffeu)
		return -EINVAL;
	/* vhost=on: the host uses AF_VSOCK, no socket; hybrid: one. */
	if ((cfg->flags & VMM_VSOCK_VHOST) ? cfg->socket_path != NULL :
	    (!cfg->socket_path || !*cfg->socket_path ||
	     strlen(cfg->socket_path) > VMM_VSOCK_PATH_MAX))
		return -EINVAL;
	ret = vm_lock_config(vm);
	if (ret)
		return ret;
	if (vm->config->vsock) {
		ret = -EEXIST;
		goto out;
	}
	if (pci_full(vm->config, "vsock")) {
		ret = -ENOSPC;
		goto out;
	}
	v = calloc(1, sizeof(*v));
	if (!v || (cfg->socket_path && dup_str(cfg->socket_path, &v->path))) {
		free(v);
		ret = -ENOMEM;
		goto out;
	}
	v->cfg = (struct vmm_vsock_config){ .struct_size = sizeof(v->cfg),
					    .flags = cfg->flags,
					    .guest_cid = cfg->guest_cid,
					    .socket_path = v->path };
	vm->config->vsock = v;
out:
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

int vmm_get_vsock_stats(struct vmm *vm, struct vmm_vsock_stats *st)
{
	struct vmm_vsock_stats full;
	int ret = 0;

	if (!vm || !st || st->struct_size < VMM_VSOCK_STATS_SIZE_VER0)
		return -EINVAL;
	memset(&full, 0, sizeof(full));
	pthread_mutex_lock(&vm->lock);
	if (!vm->config->vsock)
		ret = -ENOENT;
	else
		machine_vsock_stats(vm, &full);
	pthread_mutex_unlock(&vm->lock);
	if (!ret)
		copy_out_stats(st, st->struct_size, &full, sizeof(full));
	return ret;
}

int vmm_set_cpu_affinity(struct vmm *vm, const unsigned int *cpus, unsigned int n)
{
	unsigned int *copy = NULL;
	cpu_set_t seen;
	int ret;

	/* Checked against the process's own CPUs at vmm_start() (affinity.c):
	 * a cgroup's cpuset may change until then. */
	if ((!cpus && n) || n > VMM_MAX_VCPUS)
		return -EINVAL;
	CPU_ZERO(&seen);
	for (unsigned int i = 0; i < n; i++) {
		if (cpus[i] >= CPU_SETSIZE || CPU_ISSET(cpus[i], &seen))
			return -EINVAL;
		CPU_SET(cpus[i], &seen);
	}
	if (n && !(copy = malloc(n * sizeof(*copy))))
		return -ENOMEM;
	if (n)
		memcpy(copy, cpus, n * sizeof(*copy));
	ret = vm_lock_config(vm);
	if (ret) {
		free(copy);
		return ret;
	}
	free(vm->config->cpu_affinity);
	vm->config->cpu_affinity = copy;
	vm->config->nr_cpu_affinity = n;
	pthread_mutex_unlock(&vm->lock);
	return 0;
}
