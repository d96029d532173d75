/* SPDX-License-Identifier: MIT */
/*
 * VM-wide plumbing under the vCPU threads: the exit protocol's state and
 * the coalesced ring.  Knows no vCPU (vcpu.c sits above it and kicks
 * them: vcpu_stop_all()).
 */
#include <errno.h>
#include <linux/kvm.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "vm.h"

bool vm_set_exit(struct vmm *vm, int reason)
{
	int none = VMM_EXIT_NONE;

	/* First reason wins; later ones (e.g. vmm_stop() racing a guest
	 * reset) are ignored. */
	if (!__atomic_compare_exchange_n(&vm->exit_reason, &none, reason, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return false;
	/* Release: exit_reason is visible to whoever sees stopping; pairs
	 * with the acquire in vm_stopping(). */
	__atomic_store_n(&vm->stopping, true, __ATOMIC_RELEASE);
	return true;
}

void vm_signal_exit(struct vmm *vm)
{
	uint64_t one = 1;

	if (write(vm->exit_efd, &one, sizeof(one)) < 0)
		vmm_warn("signalling the exit eventfd: %s", strerror(errno));
}

int vm_coalesced_ring_offset(struct vmm *vm)
{
	long page = sysconf(_SC_PAGESIZE);
	int off;

	if (page <= 0)
		return -ENOTSUP;
	/* The capability's value is the ring's page in every vCPU mapping. */
	off = kvm_check_cap(vm->kvm.fd, KVM_CAP_COALESCED_MMIO);
	if (off <= 0 || (long)(off + 1) * page > vm->kvm.vcpu_mmap_size)
		return -ENOTSUP;
	return off;
}

int vm_coalesced_ring_map(struct vmm *vm, struct kvm_run *run)
{
	long page = sysconf(_SC_PAGESIZE);
	int off = vm_coalesced_ring_offset(vm);

	if (off < 0)
		return off;
	if (!run)
		return -EINVAL;
	vm->coalesced_max = (uint32_t)(((size_t)page -
					sizeof(struct kvm_coalesced_mmio_ring)) /
				       sizeof(struct kvm_coalesced_mmio));
	vm->coalesced_ring = (struct kvm_coalesced_mmio_ring *)
		((uint8_t *)run + (size_t)off * (size_t)page);
	return 0;
}

int vm_coalesce_pio(struct vmm *vm, uint64_t port, uint32_t len)
{
	struct kvm_coalesced_mmio_zone zone = { .addr = port, .size = len,
						.pio = 1 };

	if (kvm_check_cap(vm->kvm.fd, KVM_CAP_COALESCED_PIO) <= 0)
		return -ENOTSUP;
	/* The ring first: a zone nobody drains would swallow writes. */
	if (!vm->coalesced_ring)
		return -ENOTSUP;
	if (ioctl(vm->vm_fd, KVM_REGISTER_COALESCED_MMIO, &zone) < 0)
		return -errno;
	return 0;
}

void vm_flush_coalesced(struct vmm *vm)
{
	struct kvm_coalesced_mmio_ring *ring = vm->coalesced_ring;
	uint32_t first;

	if (!ring)
		return;
	/* Acquire: KVM fills an entry before it advances last. */
	if (__atomic_load_n(&ring->first, __ATOMIC_RELAXED) ==
	    __atomic_load_n(&ring->last, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&vm->coalesced_lock);
	first = ring->first;
	while (first != __atomic_load_n(&ring->last, __ATOMIC_ACQUIRE)) {
		const struct kvm_coalesced_mmio *e;
		uint8_t data[8];
		uint32_t len;

		/* first and last are KVM's shared state; a bogus index must
		 * not take us out of the page. */
		if (first >= vm->coalesced_max)
			break;
		e = &ring->coalesced_mmio[first];
		len = e->len < sizeof(data) ? e->len : (uint32_t)sizeof(data);
		memcpy(data, e->data, len);
		iobus_dispatch(e->pio ? &vm->pio : &vm->mmio, e->phys_addr,
			       data, len, true);
		first = (first + 1) % vm->coalesced_max;
		/* Release: the entry is consumed before KVM may reuse it. */
		__atomic_store_n(&ring->first, first, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&vm->coalesced_lock);
}

void vm_pause_init(struct vmm *vm)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&vm->pause_lock, NULL);
	pthread_mutex_init(&vm->pause_call, NULL);
	/* Pause waits are bounded: a monotonic clock, not the wall clock. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&vm->pause_cond, &ca);
	pthread_condattr_destroy(&ca);
}

void vm_pause_destroy(struct vmm *vm)
{
	pthread_cond_destroy(&vm->pause_cond);
	pthread_mutex_destroy(&vm->pause_lock);
	pthread_mutex_destroy(&vm->pause_call);
}
