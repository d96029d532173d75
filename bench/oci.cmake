# minivmm-oci's root image build, KVM-free (bench/oci_bench.sh).
add_executable(oci_image_bench ${CMAKE_CURRENT_SOURCE_DIR}/oci_image_bench.c)
target_link_libraries(oci_image_bench PRIVATE oci_core ${VMM_PROGRAM_LIB})
