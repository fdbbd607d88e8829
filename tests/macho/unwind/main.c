/* SPDX-License-Identifier: MIT */
/* The executable's entry point around kinds.c. */
int cu_all(int i);
int main(int argc, char **argv) {
    (void)argv;
    return cu_all(argc);
}
