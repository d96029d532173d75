/* SPDX-License-Identifier: MIT */
/* Minimal i8042: reset via command 0xFE (see i8042.h for the status value). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "legacy/i8042.h"

#define I8042_STR_OBF 0x01 /* output buffer full */
#define I8042_STR_SYS 0x04 /* system flag: self-test passed */
#define I8042_STR_CMDDAT 0x08 /* last write was a command */
#define I8042_STR_KEYLOCK 0x10 /* keyboard not inhibited */
/* No IBF (0x02): writes are always accepted.  OBF stuck: see i8042.h. */
#define I8042_STATUS \
	(I8042_STR_OBF | I8042_STR_SYS | I8042_STR_CMDDAT | I8042_STR_KEYLOCK)

#define I8042_CMD_RESET_CPU 0xfe

/* Stateless apart from the callback: nothing the guest does is remembered,
 * so there is no lock. */
struct i8042 {
	struct iobus *pio;
	void (*reset)(void *opaque);
	void *opaque;
};

/* Context: vCPU thread.  Only byte accesses mean anything on these ports;
 * wider ones are answered byte-wise the same way. */
static void i8042_data_io(void *opaque, uint64_t off, void *data, uint32_t len,
			  bool is_write)
{
	if (!is_write)
		memset(data, 0, len); /* the never-draining output byte */
	/* Data writes (keyboard commands, CTR values) have no one to go to. */
}

static void i8042_cmd_io(void *opaque, uint64_t off, void *data, uint32_t len,
			 bool is_write)
{
	struct i8042 *k = opaque;
	uint8_t cmd;

	if (!is_write) {
		memset(data, I8042_STATUS, len);
		return;
	}
	cmd = *(uint8_t *)data; /* guest-controlled; only 0xFE acts */
	if (cmd == I8042_CMD_RESET_CPU && k->reset)
		k->reset(k->opaque);
}

int i8042_create(struct iobus *pio, void (*reset)(void *opaque), void *opaque,
		 struct i8042 **out)
{
	struct i8042 *k;
	int ret;

	if (!pio || !out)
		return -EINVAL;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->pio = pio;
	k->reset = reset;
	k->opaque = opaque;
	ret = iobus_register(pio, I8042_DATA_PORT, 1, i8042_data_io, k);
	if (ret)
		goto err_free;
	ret = iobus_register(pio, I8042_CMD_PORT, 1, i8042_cmd_io, k);
	if (ret)
		goto err_data;
	*out = k;
	return 0;

err_data:
	iobus_unregister(pio, I8042_DATA_PORT);
err_free:
	free(k);
	return ret;
}

void i8042_destroy(struct i8042 *k)
{
	if (!k)
		return;
	iobus_unregister(k->pio, I8042_CMD_PORT);
	iobus_unregister(k->pio, I8042_DATA_PORT);
	free(k);
}
