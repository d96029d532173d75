/* SPDX-License-Identifier: MIT */
/* minivmm --stats / --stats-json: disk, queue and KVM counters at exit. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "vm-stats.h"

static const char *const req_names[VMM_REQ_TYPES] = {
	"read", "write", "flush", "get_id", "discard", "write_zeroes", "other",
};

static void queue_json(FILE *f, const struct vmm_queue_stats *q)
{
	fprintf(f, "{\"requests\":{");
	for (int t = 0; t < VMM_REQ_TYPES; t++)
		fprintf(f, "%s\"%s\":%" PRIu64, t ? "," : "", req_names[t],
			q->requests[t]);
	fprintf(f,
		"},\"bytes_read\":%" PRIu64 ",\"bytes_written\":%" PRIu64
		",\"io_errors\":%" PRIu64 ",\"unsupported\":%" PRIu64
		",\"kicks\":%" PRIu64 ",\"interrupts\":%" PRIu64
		",\"suppressed\":%" PRIu64 ",\"iothread\":%" PRIu32 "}",
		q->bytes_read, q->bytes_written, q->io_errors, q->unsupported,
		q->kicks, q->interrupts, q->suppressed, q->iothread);
}

static uint64_t total_requests(const struct vmm_queue_stats *q)
{
	uint64_t n = 0;

	for (int t = 0; t < VMM_REQ_TYPES; t++)
		n += q->requests[t];
	return n;
}

/* One KVM counter: a number, or null / "-" where KVM does not keep it. */
static void kvm_val(FILE *f, bool json, const char *pre, uint64_t v)
{
	if (v != VMM_STAT_UNKNOWN)
		fprintf(f, "%s%" PRIu64, pre, v);
	else
		fprintf(f, "%s%s", pre, json ? "null" : "-");
}

static void kvm_json(FILE *f, const struct vmm_kvm_stats *k, int ret)
{
	if (ret) {
		fprintf(f, "null");
		return;
	}
	fprintf(f, "{\"vcpus\":%" PRIu32, k->nr_vcpus);
	kvm_val(f, true, ",\"exits\":", k->exits);
	kvm_val(f, true, ",\"io_exits\":", k->io_exits);
	kvm_val(f, true, ",\"mmio_exits\":", k->mmio_exits);
	kvm_val(f, true, ",\"halt_exits\":", k->halt_exits);
	kvm_val(f, true, ",\"irq_exits\":", k->irq_exits);
	kvm_val(f, true, ",\"irq_injections\":", k->irq_injections);
	kvm_val(f, true, ",\"signal_exits\":", k->signal_exits);
	fprintf(f, "}");
}

/* --net: per NIC, per queue pair. */
static void nets_print(struct vmm *vm, unsigned int nr_nets, bool json, FILE *f)
{
	for (unsigned int i = 0; i < nr_nets; i++) {
		struct vmm_net_pair_stats p;
		int up = vmm_get_net_link(vm, i);

		if (json)
			fprintf(f, "%s{\"pairs\":[", i ? "," : "");
		else if (up == 0)
			fprintf(f, "net %u: link down\n", i);
		for (unsigned int q = 0; !vmm_get_net_stats(vm, i, q, &p); q++) {
			if (json)
				fprintf(f, "%s{\"iothread\":%" PRIu32
					",\"rx_packets\":%" PRIu64 ",\"rx_bytes\":%" PRIu64
					",\"rx_drops\":%" PRIu64 ",\"tx_packets\":%" PRIu64
					",\"tx_bytes\":%" PRIu64 ",\"tx_drops\":%" PRIu64
					",\"rx_kicks\":%" PRIu64 ",\"tx_kicks\":%" PRIu64
					",\"rx_interrupts\":%" PRIu64
					",\"tx_interrupts\":%" PRIu64 "}",
					q ? "," : "", p.iothread, p.rx_packets,
					p.rx_bytes, p.rx_drops, p.tx_packets, p.tx_bytes,
					p.tx_drops, p.rx_kicks, p.tx_kicks,
					p.rx_interrupts, p.tx_interrupts);
			else
				fprintf(f, "net %u pair %u (I/O thread %" PRIu32 "): rx %"
					PRIu64 " packets %" PRIu64 " bytes %" PRIu64
					" drops, tx %" PRIu64 " packets %" PRIu64
					" bytes %" PRIu64 " drops, %" PRIu64 "+%" PRIu64
					" kicks, %" PRIu64 "+%" PRIu64 " interrupts\n",
					i, q, p.iothread, p.rx_packets, p.rx_bytes,
					p.rx_drops, p.tx_packets, p.tx_bytes, p.tx_drops,
					p.rx_kicks, p.tx_kicks, p.rx_interrupts,
					p.tx_interrupts);
		}
		if (json)
			fprintf(f, "],\"link_up\":%s}", up == 1 ? "true" : "false");
	}
}

/* One device's rate limits and throttling: a JSON object, or a line when
 * it has a limit or was throttled. */
static void rate_print(FILE *f, bool json, const char *kind, unsigned int i,
		       const struct vmm_rate_stats *r)
{
	if (json)
		fprintf(f, "%s{\"bw\":%" PRIu64 ",\"bw_burst\":%" PRIu64
			",\"ops\":%" PRIu64 ",\"ops_burst\":%" PRIu64
			",\"throttled\":%" PRIu64 ",\"throttled_ns\":%" PRIu64 "}",
			i ? "," : "", r->bw, r->bw_burst, r->ops, r->ops_burst,
			r->throttled, r->throttled_ns);
	else if (r->bw || r->ops || r->throttled)
		fprintf(f, "%s %u rate limit: %" PRIu64 " bytes/s (burst %" PRIu64
			"), %" PRIu64 " ops/s (burst %" PRIu64 ") (0: none); "
			"throttled %" PRIu64 " times, %.3f ms\n", kind, i, r->bw,
			r->bw_burst, r->ops, r->ops_burst, r->throttled,
			(double)r->throttled_ns / 1e6);
}

/* Rate limits (--disk/--net rate-*=, set-rate-limit): a "rate_limits"
 * member {"disks":[...],"nets":[...]}, or lines. */
static void rates_print(struct vmm *vm, unsigned int nr_disks,
			unsigned int nr_nets, bool json, FILE *f)
{
	struct vmm_rate_stats r;

	if (json)
		fprintf(f, ",\"rate_limits\":{\"disks\":[");
	for (unsigned int i = 0; i < nr_disks; i++) {
		r = (struct vmm_rate_stats){ .struct_size = sizeof(r) };
		if (!vmm_get_disk_rate_stats(vm, i, &r))
			rate_print(f, json, "disk", i, &r);
	}
	if (json)
		fprintf(f, "],\"nets\":[");
	for (unsigned int i = 0; i < nr_nets; i++) {
		r = (struct vmm_rate_stats){ .struct_size = sizeof(r) };
		if (!vmm_get_net_rate_stats(vm, i, &r))
			rate_print(f, json, "net", i, &r);
	}
	if (json)
		fprintf(f, "]}");
}

/* The virtio-fs devices (--fs), as many as vmm_get_fs_stats() knows. */
static void fs_print(struct vmm *vm, bool json, FILE *f)
{
	struct vmm_fs_stats s = { .struct_size = sizeof(s) };

	if (json)
		fprintf(f, ",\"fs\":[");
	for (unsigned int i = 0; !vmm_get_fs_stats(vm, i, &s); i++) {
		if (json)
			fprintf(f,
				"%s{\"request_queues\":%" PRIu32
				",\"messages\":%" PRIu64 ",\"timeouts\":%" PRIu64
				",\"disconnects\":%" PRIu64 ",\"starts\":%" PRIu64
				",\"stops\":%" PRIu64 ",\"needs_reset\":%" PRIu64
				",\"orphaned\":%" PRIu64 "}",
				i ? "," : "", s.request_queues, s.messages,
				s.timeouts, s.disconnects, s.starts, s.stops,
				s.needs_reset, s.orphaned);
		else
			fprintf(f,
				"fs %u: %" PRIu32 " request queue(s), %" PRIu64
				" vhost-user messages, %" PRIu64 " timeouts, %" PRIu64
				" disconnects, %" PRIu64 " starts, %" PRIu64
				" needs-reset, %" PRIu64 " answered after it\n",
				i, s.request_queues, s.messages, s.timeouts,
				s.disconnects, s.starts, s.needs_reset, s.orphaned);
		s.struct_size = sizeof(s);
	}
	if (json)
		fprintf(f, "]");
}

/* The vsock device's counters, if the VM has one: a "vsock" member of the
 * JSON object, or a line. */
static void vsock_print(struct vmm *vm, bool json, FILE *f)
{
	struct vmm_vsock_stats v = { .struct_size = sizeof(v) };

	if (vmm_get_vsock_stats(vm, &v))
		return;
	fprintf(f,
		json ? ",\"vsock\":{\"connections_open\":%" PRIu32
		       ",\"connections\":%" PRIu64 ",\"refused\":%" PRIu64
		       ",\"bytes_to_guest\":%" PRIu64 ",\"bytes_from_guest\":%" PRIu64
		       ",\"packets_to_guest\":%" PRIu64
		       ",\"packets_from_guest\":%" PRIu64 ",\"resets\":%" PRIu64
		       ",\"bad_packets\":%" PRIu64 ",\"kicks\":%" PRIu64
		       ",\"interrupts\":%" PRIu64 "}" :
		       "vsock: %" PRIu32 " connections open, %" PRIu64
		       " in all, %" PRIu64 " refused; %" PRIu64 " bytes to the guest, %"
		       PRIu64 " from it; %" PRIu64 " packets to it, %" PRIu64
		       " from it; %" PRIu64 " resets, %" PRIu64 " bad packets; %" PRIu64
		       " wake-ups (kicks), %" PRIu64 " interrupts\n",
		v.connections_open, v.connections, v.refused, v.bytes_to_guest,
		v.bytes_from_guest, v.packets_to_guest, v.packets_from_guest,
		v.resets, v.bad_packets, v.kicks, v.interrupts);
}

/* The I/O threads (as many as vmm_get_iothread_stats() knows): a JSON
 * member, or a line summing them (their policy switches). */
static void iothreads_print(struct vmm *vm, bool json, FILE *f)
{
	struct vmm_iothread_stats t = { .struct_size = sizeof(t) };
	uint64_t loops = 0, switches = 0, normal_ns = 0;
	unsigned int i;

	if (json)
		fprintf(f, ",\"iothreads\":[");
	for (i = 0; !vmm_get_iothread_stats(vm, i, &t); i++) {
		if (json)
			fprintf(f,
				"%s{\"sched\":\"%s\",\"loops\":%" PRIu64
				",\"waits\":%" PRIu64 ",\"completions\":%" PRIu64
				",\"submits\":%" PRIu64
				",\"sched_switches\":%" PRIu64
				",\"sched_normal_ns\":%" PRIu64 "}",
				i ? "," : "",
				t.sched == VMM_IOTHREAD_SCHED_NORMAL ? "normal" : "batch",
				t.loops, t.waits, t.completions, t.submits,
				t.sched_switches, t.sched_normal_ns);
		loops += t.loops;
		switches += t.sched_switches;
		normal_ns += t.sched_normal_ns;
		t.struct_size = sizeof(t);
	}
	if (json)
		fprintf(f, "]");
	else if (i)
		fprintf(f,
			"I/O threads: %u, %" PRIu64 " rounds, %" PRIu64
			" policy switches, %.3f s run normal (adaptive)\n",
			i, loops, switches, (double)normal_ns / 1e9);
}

void stats_print(struct vmm *vm, unsigned int nr_disks, unsigned int nr_nets,
		 bool json, FILE *f)
{
	struct vmm_kvm_stats k = { .struct_size = sizeof(k) };
	struct vmm_console_stats con = { .struct_size = sizeof(con) };
	int kret = vmm_get_kvm_stats(vm, &k);
	uint64_t all_reqs = 0;

	if (json)
		fprintf(f, "{\"kvm\":");
	if (json)
		kvm_json(f, &k, kret);
	if (json)
		fprintf(f, ",\"disks\":[");
	for (unsigned int i = 0; i < nr_disks; i++) {
		struct vmm_disk_stats d = { .struct_size = sizeof(d) };

		if (vmm_get_disk_stats(vm, i, &d))
			continue;
		all_reqs += total_requests(&d.total);
		if (json) {
			fprintf(f,
				"%s{\"id\":%u,\"num_queues\":%" PRIu32
				",\"wiring_commits\":%" PRIu64 ",\"wiring_ioctls\":%" PRIu64
				",\"wiring_ns\":%" PRIu64 ",\"masked_interrupts\":%" PRIu64
				",\"resets\":%" PRIu64 ",\"needs_reset\":%" PRIu64
				",\"doorbells\":%" PRIu64 ",\"config_interrupts\":%" PRIu64
				",\"interrupts_direct\":%" PRIu64
				",\"route_flushes\":%" PRIu64
				",\"route_flushes_lazy\":%" PRIu64
				",\"cancelled\":%" PRIu64
				",\"driver_ok_ns_max\":%" PRIu64 ",\"total\":",
				i ? "," : "", i, d.num_queues, d.wiring_commits,
				d.wiring_ioctls, d.wiring_ns, d.masked_interrupts,
				d.resets, d.needs_reset, d.doorbells,
				d.config_interrupts, d.interrupts_direct,
				d.route_flushes, d.route_flushes_lazy, d.cancelled,
				d.driver_ok_ns_max);
			queue_json(f, &d.total);
			fprintf(f, ",\"queues\":[");
			for (unsigned int q = 0; q < d.num_queues; q++) {
				struct vmm_queue_stats qs;

				if (vmm_get_queue_stats(vm, i, q, &qs))
					memset(&qs, 0, sizeof(qs));
				fprintf(f, "%s", q ? "," : "");
				queue_json(f, &qs);
			}
			fprintf(f, "]}");
			continue;
		}
		fprintf(f,
			"disk %u: %" PRIu32 " queues, %" PRIu64 " requests (%" PRIu64
			" read, %" PRIu64 " write, %" PRIu64 " flush), %" PRIu64
			" errors (%" PRIu64 " cancelled); %" PRIu64
			" doorbells served in %" PRIu64
			" wake-ups (kicks), %" PRIu64 " interrupts (%" PRIu64
			" direct), %" PRIu64 " suppressed, %" PRIu64
			" config; wiring: %" PRIu64 " commits, %" PRIu64
			" KVM ioctls, %.3f ms (longest DRIVER_OK %.3f ms), %" PRIu64
			" MSI-X route refreshes (%" PRIu64 " by I/O threads)\n",
			i, d.num_queues, total_requests(&d.total),
			d.total.requests[VMM_REQ_READ], d.total.requests[VMM_REQ_WRITE],
			d.total.requests[VMM_REQ_FLUSH], d.total.io_errors,
			d.cancelled, d.doorbells, d.total.kicks, d.total.interrupts,
			d.interrupts_direct, d.total.suppressed, d.config_interrupts,
			d.wiring_commits, d.wiring_ioctls, (double)d.wiring_ns / 1e6,
			(double)d.driver_ok_ns_max / 1e6, d.route_flushes,
			d.route_flushes_lazy);
		for (unsigned int q = 0; q < d.num_queues; q++) {
			struct vmm_queue_stats qs;

			if (vmm_get_queue_stats(vm, i, q, &qs))
				continue;
			fprintf(f,
				"  queue %u (io%" PRIu32 "): %" PRIu64 " requests, %" PRIu64
				" wake-ups (kicks), %" PRIu64 " interrupts, %" PRIu64
				" suppressed\n",
				q, qs.iothread, total_requests(&qs), qs.kicks,
				qs.interrupts, qs.suppressed);
		}
	}
	if (vmm_get_console_stats(vm, &con))
		memset(&con, 0, sizeof(con));
	if (json)
		fprintf(f, "],\"nets\":[");
	nets_print(vm, nr_nets, json, f);
	if (json) {
		fprintf(f,
			"],\"console\":{\"bytes_out\":%" PRIu64
			",\"bytes_dropped\":%" PRIu64 ",\"bytes_in\":%" PRIu64 "}",
			con.bytes_out, con.bytes_dropped, con.bytes_in);
		fs_print(vm, true, f);
		vsock_print(vm, true, f);
		rates_print(vm, nr_disks, nr_nets, true, f);
		iothreads_print(vm, true, f);
		fprintf(f, "}\n");
		return;
	}
	fprintf(f,
		"console: %" PRIu64 " bytes out, %" PRIu64 " dropped, %" PRIu64
		" bytes in\n",
		con.bytes_out, con.bytes_dropped, con.bytes_in);
	fs_print(vm, false, f);
	vsock_print(vm, false, f);
	rates_print(vm, nr_disks, nr_nets, false, f);
	iothreads_print(vm, false, f);
	if (!kret) {
		fprintf(f, "kvm: %" PRIu32 " vCPUs", k.nr_vcpus);
		kvm_val(f, false, ", ", k.exits);
		kvm_val(f, false, " exits (", k.io_exits);
		kvm_val(f, false, " io, ", k.mmio_exits);
		kvm_val(f, false, " mmio, ", k.halt_exits);
		kvm_val(f, false, " halt), ", k.irq_injections);
		fprintf(f, " irq injections");
		if (all_reqs && k.exits != VMM_STAT_UNKNOWN)
			fprintf(f, ", %.3f exits per disk request",
				(double)k.exits / (double)all_reqs);
		fprintf(f, "\n");
	} else {
		fprintf(f, "kvm: no binary statistics on this kernel\n");
	}
}
