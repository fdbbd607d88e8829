/* SPDX-License-Identifier: MIT */
/* A library that test_stacks loads after it is built and stripped (strip --strip-all): only
 * .dynsym is left, so fl_symbolize_local must fall back to it. */
int stacks_lib_exported(int x);
int (*stacks_lib_hidden_address(void))(int);
void stacks_lib_call(void (*fn)(void));

int stacks_lib_exported(int x) { return x + 1; }

/* Local: in .symtab only, which the strip removes. */
static __attribute__((noinline)) int stacks_lib_static(int x) {
    __asm__ volatile("" ::: "memory");
    return x * 7;
}

int (*stacks_lib_hidden_address(void))(int) { return stacks_lib_static; }

/* Calls fn from inside the library (loaded after fl_install): a walk from fn must go through
 * this frame, with this library's unwind tables, to the caller. */
void stacks_lib_call(void (*fn)(void)) {
    fn();
    __asm__ volatile("" ::: "memory");
}
