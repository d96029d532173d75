/* Keeps the harness library non-empty before any harness file exists. */
static int vmm_harness_empty_unused __attribute__((unused));
