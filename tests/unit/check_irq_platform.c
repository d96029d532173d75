/* SPDX-License-Identifier: MIT */
/*
 * The platform's part of the GSI routing table (irq.h struct irq_platform),
 * KVM-free: x86's PIC/IOAPIC routes and extended-destination MSI addresses
 * (arch/x86/irqchip.c), and an ITS-style platform whose MSIs carry the PCI
 * requester ID (KVM_MSI_VALID_DEVID) on routes and on KVM_SIGNAL_MSI.
 */
#include <check.h>
#include <errno.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>

#include "irq.h"
#include "x86/irqchip.h"

/* The last table and the last KVM_SIGNAL_MSI. */
struct fake_kvm {
	unsigned int routing_calls, nr;
	struct kvm_irq_routing_entry e[2 * IRQ_MAX_ROUTES];
	struct kvm_msi msi;
	unsigned int msi_calls;
};

static int fake_ioctl(void *opaque, int fd, unsigned long req, void *arg)
{
	struct fake_kvm *k = opaque;

	(void)fd;
	if (req == KVM_SET_GSI_ROUTING) {
		struct kvm_irq_routing *r = arg;

		k->routing_calls++;
		ck_assert_uint_le(r->nr, IRQ_MAX_ROUTES);
		k->nr = r->nr;
		memcpy(k->e, r->entries, r->nr * sizeof(r->entries[0]));
		return 0;
	}
	if (req == KVM_SIGNAL_MSI) {
		k->msi = *(struct kvm_msi *)arg;
		k->msi_calls++;
		return 1;
	}
	return -ENOTTY;
}

static const struct kvm_irq_routing_entry *find_msi(const struct fake_kvm *k,
						    uint32_t gsi)
{
	for (unsigned int i = 0; i < k->nr; i++)
		if (k->e[i].type == KVM_IRQ_ROUTING_MSI && k->e[i].gsi == gsi)
			return &k->e[i];
	return NULL;
}

static void route(struct vm_irq *irq, uint32_t gsi, uint64_t addr,
		  uint32_t data, uint32_t devid)
{
	struct wiring_txn t;

	wiring_begin(&t, irq);
	wiring_route(&t, gsi, true, addr, data, devid);
	ck_assert_int_eq(wiring_commit(&t), 0);
}

/* APIC ID @id in an MSI address as Linux writes it with
 * KVM_FEATURE_MSI_EXT_DEST_ID: bits 7:0 in 19:12, bits 14:8 in 11:5. */
static uint64_t msi_to(unsigned int id)
{
	return 0xfee00000u | (id & 0xff) << 12 | ((id >> 8) & 0x7f) << 5;
}

START_TEST(x86_table)
{
	struct fake_kvm *k = calloc(1, sizeof(*k));
	struct vm_irq *irq;
	const struct kvm_irq_routing_entry *e;
	unsigned int ioapic = 0, pic = 0;
	uint32_t g1, g2;

	ck_assert_ptr_nonnull(k);
	ck_assert_int_eq(irq_create(3, x86_irq_platform(), fake_ioctl, k, &irq), 0);
	ck_assert_uint_eq(x86_irq_platform()->nr_chip_routes, X86_IRQ_CHIP_ROUTES);
	ck_assert_int_eq(irq_gsi_alloc(irq, &g1), 0);
	ck_assert_int_eq(irq_gsi_alloc(irq, &g2), 0);
	ck_assert_uint_eq(g1, X86_IRQ_FIRST_MSI_GSI);
	route(irq, g1, msi_to(3), 0x4031, 0x08);
	/* KVM's default routing, then the MSI route. */
	ck_assert_uint_eq(k->nr, X86_IRQ_CHIP_ROUTES + 1);
	for (unsigned int i = 0; i < X86_IRQ_CHIP_ROUTES; i++) {
		ck_assert_uint_eq(k->e[i].type, KVM_IRQ_ROUTING_IRQCHIP);
		if (k->e[i].u.irqchip.irqchip == KVM_IRQCHIP_IOAPIC) {
			ck_assert_uint_eq(k->e[i].u.irqchip.pin, k->e[i].gsi);
			ioapic++;
		} else {
			ck_assert_uint_lt(k->e[i].gsi, 16);
			ck_assert_uint_eq(k->e[i].u.irqchip.irqchip,
					  k->e[i].gsi < 8 ? KVM_IRQCHIP_PIC_MASTER
							  : KVM_IRQCHIP_PIC_SLAVE);
			ck_assert_uint_eq(k->e[i].u.irqchip.pin, k->e[i].gsi % 8);
			pic++;
		}
	}
	ck_assert_uint_eq(ioapic, 24);
	ck_assert_uint_eq(pic, 16);
	e = find_msi(k, g1);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->u.msi.address_lo, 0xfee03000);
	ck_assert_uint_eq(e->u.msi.address_hi, 0);
	ck_assert_uint_eq(e->u.msi.data, 0x4031);
	ck_assert_uint_eq(e->flags, 0); /* no requester IDs on x86 */

	/* APIC ID 300: the extended bits move to address_hi 14:8. */
	route(irq, g2, msi_to(300), 0x4032, 0x10);
	e = find_msi(k, g2);
	ck_assert_uint_eq(e->u.msi.address_lo, 0xfee2c000);
	ck_assert_uint_eq(e->u.msi.address_hi, 1u << 8);
	ck_assert_int_eq(irq_signal_msi(irq, msi_to(300), 0x4033, 0x10), 0);
	ck_assert_uint_eq(k->msi.address_lo, 0xfee2c000);
	ck_assert_uint_eq(k->msi.address_hi, 1u << 8);
	ck_assert_uint_eq(k->msi.flags, 0);
	/* Not an interrupt-range address: left alone. */
	ck_assert_int_eq(irq_signal_msi(irq, 0x12345060, 1, 0), 0);
	ck_assert_uint_eq(k->msi.address_lo, 0x12345060);
	ck_assert_uint_eq(k->msi.address_hi, 0);
	/* GSIs of the chip are not MSI GSIs. */
	{
		struct wiring_txn t;

		wiring_begin(&t, irq);
		wiring_route(&t, 4, true, msi_to(0), 1, 0);
		ck_assert_int_eq(wiring_commit(&t), -EINVAL);
	}
	irq_destroy(irq);
	free(k);
}
END_TEST

/* An ITS-style controller: no chip routes, MSIs tagged with the device. */
static const struct irq_platform its = {
	.first_msi_gsi = 0,
	.msi_devid = true,
};

START_TEST(devid_platform)
{
	struct fake_kvm *k = calloc(1, sizeof(*k));
	struct vm_irq *irq;
	const struct kvm_irq_routing_entry *e;
	uint32_t g;

	ck_assert_ptr_nonnull(k);
	ck_assert_int_eq(irq_create(3, &its, fake_ioctl, k, &irq), 0);
	ck_assert_int_eq(irq_gsi_alloc(irq, &g), 0);
	ck_assert_uint_eq(g, 0);
	route(irq, g, 0x08090040, 7, 0x18); /* GITS_TRANSLATER, event 7 */
	ck_assert_uint_eq(k->nr, 1);
	e = find_msi(k, g);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->flags, KVM_MSI_VALID_DEVID);
	ck_assert_uint_eq(e->u.msi.devid, 0x18);
	ck_assert_uint_eq(e->u.msi.address_lo, 0x08090040); /* untranslated */
	/* Only the requester changes (a device moved to another slot): that
	 * is a route change too. */
	route(irq, g, 0x08090040, 7, 0x20);
	ck_assert_uint_eq(k->routing_calls, 2);
	ck_assert_uint_eq(find_msi(k, g)->u.msi.devid, 0x20);
	route(irq, g, 0x08090040, 7, 0x20);
	ck_assert_uint_eq(k->routing_calls, 2); /* unchanged: no ioctl */
	ck_assert_int_eq(irq_signal_msi(irq, 0x08090040, 9, 0x20), 0);
	ck_assert_uint_eq(k->msi.flags, KVM_MSI_VALID_DEVID);
	ck_assert_uint_eq(k->msi.devid, 0x20);
	ck_assert_uint_eq(k->msi.data, 9);
	irq_destroy(irq);
	free(k);
}
END_TEST

START_TEST(bad_platforms)
{
	struct vm_irq *irq;
	struct irq_platform p = { .nr_chip_routes = 1 }; /* no table */

	ck_assert_int_eq(irq_create(3, NULL, fake_ioctl, NULL, &irq), -EINVAL);
	ck_assert_int_eq(irq_create(3, &p, fake_ioctl, NULL, &irq), -EINVAL);
	p = (struct irq_platform){ .first_msi_gsi = IRQ_MAX_ROUTES };
	ck_assert_int_eq(irq_create(3, &p, fake_ioctl, NULL, &irq), -EINVAL);
}
END_TEST

static Suite *irq_platform_suite(void)
{
	Suite *s = suite_create("irq-platform");
	TCase *tc = tcase_create("platform");

	tcase_add_test(tc, x86_table);
	tcase_add_test(tc, devid_platform);
	tcase_add_test(tc, bad_platforms);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(irq_platform_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
