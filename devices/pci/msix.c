/* SPDX-License-Identifier: MIT */
/*
 * MSI-X table/PBA emulation (see msix.h).
 *
 * Lost-interrupt argument.  An interrupt source (I/O thread) and an unmask
 * (vCPU thread) race:
 *     source:  set pending (RMW)      unmask:  store mask=0 / enable / !fmask
 *                                              / master
 *              load mask state                 owner's take_pending (RMW)
 * All four are sequentially consistent, so in their single total order one
 * side's second step comes after the other side's first step: either the
 * source sees the vector unmasked and takes its pending bit back (and fires),
 * or the owner's take_pending sees the bit (and fires).  take_pending is an
 * atomic fetch-and, so only one of them gets the bit: the interrupt is
 * delivered exactly once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pci/msix.h"

#define MSIX_WORDS_PER_ENTRY (MSIX_ENTRY_SIZE / 4)

bool msix_enabled(const struct msix *m)
{
	return __atomic_load_n(&m->enabled, __ATOMIC_SEQ_CST);
}

bool msix_vector_masked(const struct msix *m, unsigned int vec)
{
	uint32_t ctrl;

	if (vec >= m->nr)
		return true;
	/* Seq-cst loads: second step of the source side of the argument at
	 * the top of this file; pair with the seq-cst stores in
	 * msix_table_write() and msix_cfg_write().  As acquire loads they
	 * also make the address/data the guest wrote before unmasking
	 * visible to msix_get_msg() on this thread. */
	if (!__atomic_load_n(&m->enabled, __ATOMIC_SEQ_CST) ||
	    __atomic_load_n(&m->fmasked, __ATOMIC_SEQ_CST) ||
	    !__atomic_load_n(&m->master, __ATOMIC_SEQ_CST))
		return true;
	ctrl = __atomic_load_n(&m->table[vec * MSIX_WORDS_PER_ENTRY +
					 MSIX_ENTRY_CTRL / 4],
			       __ATOMIC_SEQ_CST);
	return ctrl & MSIX_ENTRY_CTRL_MASKED;
}

void msix_get_msg(const struct msix *m, unsigned int vec, uint64_t *addr,
		  uint32_t *data)
{
	const uint32_t *e;

	if (vec >= m->nr) {
		*addr = 0;
		*data = 0;
		return;
	}
	e = &m->table[vec * MSIX_WORDS_PER_ENTRY];
	/* Relaxed: see msix.h on torn reads of an unmasked vector. */
	*addr = __atomic_load_n(&e[MSIX_ENTRY_ADDR_LO / 4], __ATOMIC_RELAXED) |
		(uint64_t)__atomic_load_n(&e[MSIX_ENTRY_ADDR_HI / 4],
					  __ATOMIC_RELAXED)
			<< 32;
	*data = __atomic_load_n(&e[MSIX_ENTRY_DATA / 4], __ATOMIC_RELAXED);
}

void msix_set_pending(struct msix *m, unsigned int vec)
{
	if (vec >= m->nr)
		return;
	/* Seq-cst RMW: first step of the source side (see top of file). */
	__atomic_fetch_or(&m->pba[vec / 64], 1ull << (vec % 64),
			  __ATOMIC_SEQ_CST);
}

bool msix_take_pending(struct msix *m, unsigned int vec)
{
	uint64_t bit, old;

	if (vec >= m->nr)
		return false;
	bit = 1ull << (vec % 64);
	/* Seq-cst RMW: second step of the unmask side; only one caller can
	 * see the bit set. */
	old = __atomic_fetch_and(&m->pba[vec / 64], ~bit, __ATOMIC_SEQ_CST);
	return old & bit;
}

/* Context: any thread. */
bool msix_try_fire(struct msix *m, unsigned int vec)
{
	if (vec >= m->nr)
		return false;
	if (!msix_vector_masked(m, vec))
		return true;
	msix_set_pending(m, vec);
	/* Re-check after publishing the pending bit: an unmask that ran in
	 * between may already have looked for it (top of file). */
	if (!msix_vector_masked(m, vec))
		return msix_take_pending(m, vec);
	return false;
}

static void msix_notify(struct msix *m, unsigned int vec)
{
	if (m->vector_changed)
		m->vector_changed(m->opaque, vec);
}

/* Guest-controlled @off/@len: only aligned 4/8-byte accesses that lie
 * inside a region of @size bytes are honoured. */
static bool msix_access_ok(uint64_t off, uint32_t len, uint32_t size)
{
	return (len == 4 || len == 8) && !(off % len) && off < size &&
	       len <= size - off;
}

void msix_table_read(struct msix *m, uint64_t off, void *data, uint32_t len)
{
	uint8_t *p = data;

	if (!msix_access_ok(off, len, msix_table_size(m->nr))) {
		memset(data, 0, len);
		return;
	}
	for (uint32_t w = 0; w < len / 4; w++) {
		uint32_t v = __atomic_load_n(&m->table[off / 4 + w],
					     __ATOMIC_RELAXED);

		memcpy(p + 4 * w, &v, 4);
	}
}

/* Context: vCPU thread. */
void msix_table_write(struct msix *m, uint64_t off, const void *data,
		      uint32_t len)
{
	const uint8_t *p = data;
	bool changed = false;

	if (!msix_access_ok(off, len, msix_table_size(m->nr)))
		return;
	/* An aligned 8-byte access never crosses a 16-byte entry. */
	for (uint32_t w = 0; w < len / 4; w++) {
		size_t idx = off / 4 + w;
		unsigned int field = (unsigned int)(idx % MSIX_WORDS_PER_ENTRY);
		uint32_t v;

		memcpy(&v, p + 4 * w, 4);
		if (field == MSIX_ENTRY_ADDR_LO / 4)
			v &= ~3u; /* dword-aligned address: bits 1:0 are 0 */
		else if (field == MSIX_ENTRY_CTRL / 4)
			v &= MSIX_ENTRY_CTRL_MASKED; /* rest reserved */
		if (__atomic_load_n(&m->table[idx], __ATOMIC_RELAXED) == v)
			continue;
		changed = true;
		if (field == MSIX_ENTRY_CTRL / 4)
			/* Seq-cst: first step of the unmask side (top of
			 * file), and a release of the address/data written
			 * before it (pairs with msix_vector_masked()). */
			__atomic_store_n(&m->table[idx], v, __ATOMIC_SEQ_CST);
		else
			__atomic_store_n(&m->table[idx], v, __ATOMIC_RELAXED);
	}
	if (changed)
		msix_notify(m, (unsigned int)(off / MSIX_ENTRY_SIZE));
}

void msix_pba_read(struct msix *m, uint64_t off, void *data, uint32_t len)
{
	uint64_t v;

	if (!msix_access_ok(off, len, msix_pba_size(m->nr))) {
		memset(data, 0, len);
		return;
	}
	v = __atomic_load_n(&m->pba[off / 8], __ATOMIC_RELAXED);
	if (len == 4) {
		uint32_t v32 = (uint32_t)(v >> (8 * (off % 8)));

		memcpy(data, &v32, 4);
	} else {
		memcpy(data, &v, 8);
	}
}

bool msix_bar_access(struct msix *m, uint64_t off, void *data, uint32_t len,
		     bool is_write)
{
	if (off >= m->table_off && off - m->table_off < msix_table_size(m->nr)) {
		if (is_write)
			msix_table_write(m, off - m->table_off, data, len);
		else
			msix_table_read(m, off - m->table_off, data, len);
		return true;
	}
	if (off >= m->pba_off && off - m->pba_off < msix_pba_size(m->nr)) {
		if (!is_write) /* the PBA is read-only */
			msix_pba_read(m, off - m->pba_off, data, len);
		return true;
	}
	return false;
}

static bool msix_touches(uint32_t off, uint32_t len, unsigned int reg)
{
	return off < reg + 2 && reg < off + len;
}

/* Context: vCPU thread, PCI bus lock held (from the owner's cfg_write). */
void msix_cfg_write(struct msix *m, uint32_t off, uint32_t len)
{
	unsigned int ctrl_off = m->cap_off + MSIX_CAP_CTRL;
	bool en = __atomic_load_n(&m->enabled, __ATOMIC_RELAXED);
	bool fm = __atomic_load_n(&m->fmasked, __ATOMIC_RELAXED);
	bool bm = __atomic_load_n(&m->master, __ATOMIC_RELAXED);

	if (msix_touches(off, len, ctrl_off)) {
		/* Only bits 15:14 are guest-writable (wmask in msix_init). */
		uint16_t ctrl = pci_cfg_get16(m->dev, ctrl_off);

		en = ctrl & MSIX_CTRL_ENABLE;
		fm = ctrl & MSIX_CTRL_MASKALL;
	}
	if (msix_touches(off, len, PCI_CFG_COMMAND))
		bm = pci_cfg_get16(m->dev, PCI_CFG_COMMAND) & PCI_CMD_MASTER;
	if (en == __atomic_load_n(&m->enabled, __ATOMIC_RELAXED) &&
	    fm == __atomic_load_n(&m->fmasked, __ATOMIC_RELAXED) &&
	    bm == __atomic_load_n(&m->master, __ATOMIC_RELAXED))
		return;
	/* Seq-cst: first step of the unmask side (top of file); bus
	 * mastering is one more mask bit shared by every vector. */
	__atomic_store_n(&m->enabled, en, __ATOMIC_SEQ_CST);
	__atomic_store_n(&m->fmasked, fm, __ATOMIC_SEQ_CST);
	__atomic_store_n(&m->master, bm, __ATOMIC_SEQ_CST);
	for (unsigned int v = 0; v < m->nr; v++)
		msix_notify(m, v);
}

int msix_init(struct msix *m, struct pci_device *dev, unsigned int nr_vectors,
	      unsigned int bar, uint32_t table_off, uint32_t pba_off)
{
	uint64_t tsz, psz, bar_size;
	unsigned int cap;
	int ret;

	if (!m || !dev || dev->bus || !nr_vectors ||
	    nr_vectors > MSIX_MAX_VECTORS || bar >= PCI_NUM_BARS ||
	    dev->bars[bar].upper || (table_off & 7) || (pba_off & 7))
		return -EINVAL;
	tsz = msix_table_size(nr_vectors);
	psz = msix_pba_size(nr_vectors);
	if ((uint64_t)table_off < (uint64_t)pba_off + psz &&
	    (uint64_t)pba_off < (uint64_t)table_off + tsz)
		return -EINVAL; /* overlap */
	bar_size = dev->bars[bar].size;
	if (bar_size && ((uint64_t)table_off + tsz > bar_size ||
			 (uint64_t)pba_off + psz > bar_size))
		return -EINVAL;
	memset(m, 0, sizeof(*m));
	m->table = calloc(nr_vectors * MSIX_WORDS_PER_ENTRY, sizeof(uint32_t));
	m->pba = calloc(psz / 8, sizeof(uint64_t));
	if (!m->table || !m->pba) {
		ret = -ENOMEM;
		goto err;
	}
	ret = pci_add_capability(dev, PCI_CAPID_MSIX, MSIX_CAP_SIZE, &cap);
	if (ret)
		goto err;
	m->dev = dev;
	m->nr = nr_vectors;
	m->bar = bar;
	m->table_off = table_off;
	m->pba_off = pba_off;
	m->cap_off = cap;
	/* pci_register_device() sets COMMAND.MASTER (msix.h). */
	m->master = true;
	pci_cfg_set16(dev, cap + MSIX_CAP_CTRL, (uint16_t)(nr_vectors - 1));
	pci_cfg_set_wmask(dev, cap + MSIX_CAP_CTRL, 2,
			  MSIX_CTRL_ENABLE | MSIX_CTRL_MASKALL);
	pci_cfg_set32(dev, cap + MSIX_CAP_TABLE, table_off | bar);
	pci_cfg_set32(dev, cap + MSIX_CAP_PBA, pba_off | bar);
	/* Reset state: every vector masked. */
	for (unsigned int v = 0; v < nr_vectors; v++)
		m->table[v * MSIX_WORDS_PER_ENTRY + MSIX_ENTRY_CTRL / 4] =
			MSIX_ENTRY_CTRL_MASKED;
	return 0;

err:
	free(m->table);
	free(m->pba);
	m->table = NULL;
	m->pba = NULL;
	return ret;
}

void msix_exit(struct msix *m)
{
	if (!m)
		return;
	free(m->table);
	free(m->pba);
	m->table = NULL;
	m->pba = NULL;
	m->nr = 0;
}

void msix_set_notifier(struct msix *m,
		       void (*vector_changed)(void *opaque, unsigned int vec),
		       void *opaque)
{
	m->vector_changed = vector_changed;
	m->opaque = opaque;
}
