// SPDX-License-Identifier: MIT
// A JVM that crashes in native VM code under Java frames (tests/realprog/test_jvm.py): a warm-up
// loop that throws and catches NullPointerExceptions (the JVM takes those SIGSEGVs itself), then
// Unsafe.putAddress(16, 1), a write to address 16 inside libjvm's Unsafe_PutLong.
public class Crash {
    static int first(int[] a) { return a[0]; }

    public static void main(String[] args) throws Exception {
        int n = 0;
        for (int i = 0; i < 20000; i++) {
            try {
                n += first(i % 2 == 0 ? null : new int[] {1});
            } catch (NullPointerException e) {
                n++;
            }
        }
        System.out.println("warm " + n);
        java.lang.reflect.Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
        f.setAccessible(true);
        ((sun.misc.Unsafe) f.get(null)).putAddress(16, 1);
    }
}
