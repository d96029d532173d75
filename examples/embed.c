/* The README's embedding example, built by CI so that it keeps compiling. */
#include <stdio.h>
#include <vmm/vmm.h>

int main(int argc, char **argv)
{
	struct vmm *vm;
	int reason, ret;

	if (argc < 3)
		return fprintf(stderr, "usage: %s BZIMAGE INITRD\n", argv[0]), 2;
	if ((ret = vmm_create(&vm)))
		return fprintf(stderr, "vmm_create: %d\n", ret), 1;
	vmm_set_vcpus(vm, 2);
	vmm_set_memory(vm, 512ull << 20);
	vmm_set_kernel(vm, argv[1], argv[2], "console=ttyS0 reboot=k panic=-1");
	if ((ret = vmm_start(vm)) == 0)
		vmm_wait(vm, &reason); /* until the guest powers off or reboots */
	vmm_destroy(vm);
	return ret ? 1 : (reason == VMM_EXIT_GUEST_RESET ||
			  reason == VMM_EXIT_POWEROFF) ? 0 : 1;
}
