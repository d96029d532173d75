/* SPDX-License-Identifier: MIT */
/*
 * netcount: a virtio-net NIC's notifications as the guest driver counts
 * them, for bench/net_rig.sh, which serves it over TCP from the guest
 * (tests/guest/net-bench).  Counted in the guest, the figures are the
 * same for every VMM behind the NIC (minivmm, QEMU, vhost-net), where
 * minivmm's API statistics count its own side only.
 *
 *   netcount [--stats FILE] [--interrupts FILE] [--device NAME] IFACE
 *
 * prints one line
 *   rx_kicks=.. tx_kicks=.. rx_interrupts=.. tx_interrupts=..
 *   rx_packets=.. tx_packets=..
 * each summed over the NIC's queues:
 *   - kicks and packets from the driver's ethtool statistics
 *     (SIOCETHTOOL ETH_SS_STATS: virtio_net's rx_queue_N_kicks,
 *     tx_queue_N_kicks, rx_queue_N_packets, tx_queue_N_packets, as Linux
 *     6.1 names them; rxN_kicks, txN_kicks from 6.9 on, with the
 *     packets from /sys/class/net/IFACE/statistics instead; a GSO frame
 *     is one packet), or from FILE in `ethtool -S` form ("name: value"
 *     lines; packets from sysfs where FILE has none per queue);
 *   - interrupts from /proc/interrupts (or FILE): every CPU's count of
 *     the lines named DEVICE-input.N (RX) and DEVICE-output.N (TX), DEVICE
 *     being the virtio device under IFACE (/sys/class/net/IFACE/device,
 *     e.g. virtio1) or NAME.  A NIC without a vector per queue (one
 *     shared "DEVICE-virtqueues" line) cannot be split: refused.
 *
 * Exit: 0 printed, 1 a source unreadable or without the counters, 2 bad
 * arguments.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

struct counts {
	uint64_t rx_kicks, tx_kicks, rx_irqs, tx_irqs, rx_packets, tx_packets;
	int kicks_seen, packets_seen, irqs_seen;
};

/* One statistic: the per-queue kicks and packets add to their sums,
 * named rx_queue_N_kicks (Linux up to 6.8) or rxN_kicks (later kernels,
 * which report packets elsewhere: sysfs_packets()); other names
 * (rx_queue_N_xdp_packets, ...) are left out. */
static void add_stat(struct counts *c, const char *name, uint64_t v)
{
	const char *p;
	int rx;

	if (!strncmp(name, "rx", 2))
		rx = 1;
	else if (!strncmp(name, "tx", 2))
		rx = 0;
	else
		return;
	p = name + 2;
	if (!strncmp(p, "_queue_", 7))
		p += 7;
	if (*p < '0' || *p > '9')
		return;
	while (*p >= '0' && *p <= '9')
		p++;
	if (!strcmp(p, "_kicks")) {
		*(rx ? &c->rx_kicks : &c->tx_kicks) += v;
		c->kicks_seen = 1;
	} else if (!strcmp(p, "_packets")) {
		*(rx ? &c->rx_packets : &c->tx_packets) += v;
		c->packets_seen = 1;
	}
}

/* `ethtool -S` form: a header line, then "   name: value" lines. */
static int stats_from_file(struct counts *c, const char *path)
{
	char line[256], name[128];
	uint64_t v;
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "netcount: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " %127[^:]: %" SCNu64, name, &v) == 2)
			add_stat(c, name, v);
	fclose(f);
	return 0;
}

static int ethtool(int s, const char *ifname, void *data)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = data;
	return ioctl(s, SIOCETHTOOL, &ifr);
}

/* The driver's statistics: their count, their names, their values. */
static int stats_from_driver(struct counts *c, const char *ifname)
{
	struct ethtool_sset_info *info;
	struct ethtool_gstrings *names = NULL;
	struct ethtool_stats *vals = NULL;
	uint32_t n;
	int s, rc = -1;

	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		fprintf(stderr, "netcount: socket: %s\n", strerror(errno));
		return -1;
	}
	info = calloc(1, sizeof(*info) + sizeof(uint32_t));
	if (!info) {
		fprintf(stderr, "netcount: out of memory\n");
		goto out;
	}
	info->cmd = ETHTOOL_GSSET_INFO;
	info->sset_mask = 1ULL << ETH_SS_STATS;
	errno = 0;
	if (ethtool(s, ifname, info) < 0 || !(info->sset_mask & (1ULL << ETH_SS_STATS))) {
		fprintf(stderr, "netcount: %s: no driver statistics (%s)\n", ifname,
			errno ? strerror(errno) : "none offered");
		goto out;
	}
	n = info->data[0];
	names = calloc(1, sizeof(*names) + (size_t)n * ETH_GSTRING_LEN);
	vals = calloc(1, sizeof(*vals) + (size_t)n * sizeof(uint64_t));
	if (!names || !vals) {
		fprintf(stderr, "netcount: %s: out of memory for %u statistics\n", ifname, n);
		goto out;
	}
	names->cmd = ETHTOOL_GSTRINGS;
	names->string_set = ETH_SS_STATS;
	names->len = n;
	vals->cmd = ETHTOOL_GSTATS;
	vals->n_stats = n;
	if (ethtool(s, ifname, names) < 0 || ethtool(s, ifname, vals) < 0) {
		fprintf(stderr, "netcount: %s: reading statistics: %s\n", ifname, strerror(errno));
		goto out;
	}
	for (uint32_t i = 0; i < n && i < names->len && i < vals->n_stats; i++) {
		char name[ETH_GSTRING_LEN + 1];

		memcpy(name, names->data + (size_t)i * ETH_GSTRING_LEN, ETH_GSTRING_LEN);
		name[ETH_GSTRING_LEN] = '\0';
		add_stat(c, name, vals->data[i]);
	}
	rc = 0;
out:
	free(info);
	free(names);
	free(vals);
	close(s);
	return rc;
}

/* The interface's packet counters, where the driver's statistics have
 * none per queue (Linux 6.9 on: virtio_net reports them through netlink
 * queue statistics; its ndo_get_stats64 sums the same per-queue counts). */
static int sysfs_packets(struct counts *c, const char *ifname)
{
	static const char *const what[2] = { "rx_packets", "tx_packets" };
	uint64_t *dst[2] = { &c->rx_packets, &c->tx_packets };

	for (int i = 0; i < 2; i++) {
		char path[PATH_MAX];
		FILE *f;
		int ok;

		snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/%s", ifname, what[i]);
		f = fopen(path, "r");
		if (!f) {
			fprintf(stderr, "netcount: %s: %s\n", path, strerror(errno));
			return -1;
		}
		ok = fscanf(f, "%" SCNu64, dst[i]) == 1;
		fclose(f);
		if (!ok) {
			fprintf(stderr, "netcount: %s: not a number\n", path);
			return -1;
		}
	}
	return 0;
}

/* The virtio device under IFACE: the last part of its device link. */
static int device_of(const char *ifname, char *dev, size_t len)
{
	char link[PATH_MAX], target[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/sys/class/net/%s/device", ifname);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0) {
		fprintf(stderr, "netcount: %s: %s\n", link, strerror(errno));
		return -1;
	}
	target[n] = '\0';
	snprintf(dev, len, "%s", basename(target));
	return 0;
}

/* /proc/interrupts: a header of CPU names, then per line "IRQ:", one
 * count per CPU, and words of which the last is the handler's name. */
static int irqs_from_file(struct counts *c, const char *path, const char *dev)
{
	char *line = NULL, *tok, *save;
	size_t cap = 0, dl = strlen(dev);
	int ncpu = 0, shared = 0;
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "netcount: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (getline(&line, &cap, f) > 0)
		for (tok = strtok_r(line, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save))
			ncpu++;
	while (getline(&line, &cap, f) > 0) {
		uint64_t sum = 0;
		char *last = NULL;
		int i = 0;

		strtok_r(line, " \t\n", &save); /* past "IRQ:" */
		for (tok = strtok_r(NULL, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
			if (i < ncpu && tok[0] >= '0' && tok[0] <= '9')
				sum += strtoull(tok, NULL, 10), i++;
			last = tok;
		}
		if (!last || strncmp(last, dev, dl) || last[dl] != '-')
			continue;
		if (!strncmp(last + dl + 1, "input.", 6)) {
			c->rx_irqs += sum;
			c->irqs_seen = 1;
		} else if (!strncmp(last + dl + 1, "output.", 7)) {
			c->tx_irqs += sum;
			c->irqs_seen = 1;
		} else if (!strcmp(last + dl + 1, "virtqueues")) {
			shared = 1;
		}
	}
	free(line);
	fclose(f);
	if (!c->irqs_seen) {
		fprintf(stderr, "netcount: %s: no %s-input.N / -output.N lines%s\n", path, dev,
			shared ? " (its queues share one vector)" : "");
		return -1;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: netcount [--stats FILE] [--interrupts FILE] [--device NAME] IFACE\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "stats", required_argument, NULL, 's' },
		{ "interrupts", required_argument, NULL, 'i' },
		{ "device", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *stats = NULL, *irqs = "/proc/interrupts", *dev = NULL;
	char devbuf[NAME_MAX + 1];
	struct counts c = { 0 };
	int o;

	while ((o = getopt_long(argc, argv, "s:i:d:h", opts, NULL)) != -1) {
		switch (o) {
		case 's': stats = optarg; break;
		case 'i': irqs = optarg; break;
		case 'd': dev = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1 || !argv[optind][0] || strlen(argv[optind]) >= IFNAMSIZ) {
		usage(stderr);
		return 2;
	}
	if (!dev) {
		if (device_of(argv[optind], devbuf, sizeof(devbuf)) < 0)
			return 1;
		dev = devbuf;
	}
	if ((stats ? stats_from_file(&c, stats) : stats_from_driver(&c, argv[optind])) < 0)
		return 1;
	if (!c.kicks_seen) {
		fprintf(stderr, "netcount: %s: no rx_queue_N_kicks / tx_queue_N_kicks statistics\n",
			stats ? stats : argv[optind]);
		return 1;
	}
	if (!c.packets_seen && sysfs_packets(&c, argv[optind]) < 0)
		return 1;
	if (irqs_from_file(&c, irqs, dev) < 0)
		return 1;
	printf("rx_kicks=%" PRIu64 " tx_kicks=%" PRIu64 " rx_interrupts=%" PRIu64
	       " tx_interrupts=%" PRIu64 " rx_packets=%" PRIu64 " tx_packets=%" PRIu64 "\n",
	       c.rx_kicks, c.tx_kicks, c.rx_irqs, c.tx_irqs, c.rx_packets, c.tx_packets);
	return 0;
}
