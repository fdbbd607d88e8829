// SPDX-License-Identifier: MIT
// A Rust program for the demangling tests (tests/demangle/test_rust.py): generics, closures,
// trait objects, impl blocks, iterators, const generics, a non-ASCII identifier, fn pointers,
// and much of std, so that its symbols cover both mangling schemes' grammar; and two ways to
// die: `segv` (a bad pointer read in a closure of a generic function), `abort`
// (std::process::abort) and `overflow` (unbounded recursion: std's own handler reports the stack
// overflow and aborts). Built by the test with rustc, once per scheme.
use std::collections::{BTreeMap, HashMap};
use std::fmt;

pub trait Shape {
    fn area(&self) -> f64;
    fn name(&self) -> String {
        String::from("shape")
    }
}

pub struct Circle {
    r: f64,
}

pub struct Rect<T> {
    w: T,
    h: T,
}

impl Shape for Circle {
    fn area(&self) -> f64 {
        3.14159 * self.r * self.r
    }
    fn name(&self) -> String {
        format!("circle {}", self.r)
    }
}

impl<T: Copy + Into<f64>> Shape for Rect<T> {
    fn area(&self) -> f64 {
        self.w.into() * self.h.into()
    }
}

impl fmt::Display for Circle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Circle({})", self.r)
    }
}

pub struct Buf<const N: usize> {
    data: [u8; N],
}

impl<const N: usize> Buf<N> {
    #[inline(never)]
    pub fn new(fill: u8) -> Self {
        Buf { data: [fill; N] }
    }
    #[inline(never)]
    pub fn sum(&self) -> u64 {
        self.data.iter().map(|&b| b as u64).sum()
    }
}

#[inline(never)]
pub fn apply<T, F: Fn(T) -> T>(x: T, f: F) -> T {
    f(x)
}

#[inline(never)]
pub fn total(shapes: &[Box<dyn Shape>]) -> f64 {
    shapes.iter().filter(|s| s.area() > 0.5).map(|s| s.area()).sum()
}

#[inline(never)]
pub fn größe(v: &[u32]) -> usize {
    v.iter().filter(|x| **x % 2 == 1).count()
}

#[inline(never)]
pub fn through(f: fn(u32) -> u32, g: &dyn Fn(u32) -> u32, it: &mut dyn Iterator<Item = u32>) -> u32 {
    it.map(|x| g(f(x))).fold(0, |a, b| a.wrapping_add(b))
}

fn twice(x: u32) -> u32 {
    x * 2
}

// The crash: a closure of a generic function reads through a bad pointer.
#[inline(never)]
pub fn crash_in<T: Copy + fmt::Debug>(base: usize) -> T {
    let read = |p: *const T| unsafe { std::ptr::read_volatile(p) };
    let v = read(base as *const T);
    println!("{:?}", v);
    v
}

#[inline(never)]
pub fn deep(n: u64) -> u64 {
    let a = std::hint::black_box([n; 32]);
    if n == u64::MAX {
        0
    } else {
        deep(n + 1) + a[(n % 32) as usize]
    }
}

#[inline(never)]
pub fn do_abort(code: i32) -> ! {
    eprintln!("aborting with {}", code);
    std::process::abort()
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let shapes: Vec<Box<dyn Shape>> = vec![
        Box::new(Circle { r: 1.5 }),
        Box::new(Rect { w: 2.0f32, h: 3.0f32 }),
        Box::new(Rect { w: 2u8, h: 7u8 }),
    ];
    let mut words: HashMap<String, usize> = HashMap::new();
    let mut ordered = BTreeMap::new();
    for (i, s) in shapes.iter().enumerate() {
        *words.entry(s.name()).or_insert(0) += 1;
        ordered.insert(i, s.area());
    }
    let mut nums: Vec<u32> = (1..40).rev().collect();
    nums.sort_unstable();
    nums.dedup();
    let k = 3;
    let scaled = apply(7u64, move |x| x * k);
    let text = apply(String::from("a"), |s| s + "b");
    let b = Buf::<16>::new(3);
    let odd = größe(&nums);
    let t = through(twice, &|x| x + 1, &mut nums.clone().into_iter());
    let handle = std::thread::spawn(move || nums.iter().map(|x| *x as u64).sum::<u64>());
    let joined = handle.join().unwrap_or(0);
    println!("{} {} {} {} {} {} {:?} {}", total(&shapes), scaled, text, b.sum(), odd, t, ordered,
             Circle { r: 2.0 });
    println!("{} {}", words.len(), joined);
    match mode.as_str() {
        "segv" => {
            crash_in::<u64>(16);
        }
        "abort" => do_abort(3),
        "overflow" => println!("{}", deep(0)),
        _ => {}
    }
}
