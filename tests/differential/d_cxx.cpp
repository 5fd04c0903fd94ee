// d_cxx.cpp - the C++ program of the differential corpus
// (tests/integration/test_differential.py), built with g++ and clang++
// at several levels (tests/differential/Makefile.inc). Every operator
// new goes to rt_alloc (examples/rtalloc), so the standard library's
// containers allocate through the probe, from stacks with:
//   template recursion          (Level<N>::run calls Level<N-1>::run)
//   heavy inlining              (std::map, std::vector, std::string,
//                                std::sort with a lambda, std::function)
//   exceptions                  (thrown from deep recursion; an exception
//                                object and destructors that allocate while
//                                the stack unwinds; allocations in the
//                                catch blocks)
//   virtual calls
// No output; exit status 0.
#include <algorithm>
#include <functional>
#include <map>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "rt_alloc.h"

void *operator new(std::size_t n)
{
    void *p = rt_alloc(n, 1);
    if (!p)
        throw std::bad_alloc();
    return p;
}
void *operator new[](std::size_t n) { return operator new(n); }
void operator delete(void *p) noexcept { rt_free(p); }
void operator delete[](void *p) noexcept { rt_free(p); }
void operator delete(void *p, std::size_t) noexcept { rt_free(p); }
void operator delete[](void *p, std::size_t) noexcept { rt_free(p); }

#define NOINLINE __attribute__((noinline))

namespace {

volatile unsigned long sink;

// A destructor that allocates: it runs while an exception unwinds.
struct Noisy {
    int id;
    explicit Noisy(int i) : id(i) {}
    NOINLINE ~Noisy()
    {
        std::string s(40 + id % 8, 'd');
        sink += s.size();
    }
};

struct Failure : std::runtime_error {
    std::vector<int> trail;
    explicit Failure(int depth)
        : std::runtime_error(std::string(60, 'e') + std::to_string(depth)),
          trail(depth, depth) {}
};

template <int N> struct Level {
    static NOINLINE int run(std::map<int, std::string> &m, int seed)
    {
        Noisy guard(N);
        m[seed * 31 + N] = std::string(24 + N, char('a' + N % 26));
        if (seed % 7 == N)
            throw Failure(N);
        return Level<N - 1>::run(m, seed + 1) + N;
    }
};

template <> struct Level<0> {
    static NOINLINE int run(std::map<int, std::string> &m, int seed)
    {
        m[seed] = std::string(32, 'z');
        return 0;
    }
};

struct Shape {
    virtual ~Shape() = default;
    virtual std::vector<double> outline(int n) const = 0;
};

struct Square : Shape {
    std::vector<double> outline(int n) const override
    {
        std::vector<double> v;
        for (int i = 0; i < n; i++)
            v.push_back(i * 1.5);   // grows: several allocations
        return v;
    }
};

struct Circle : Shape {
    std::vector<double> outline(int n) const override
    {
        return std::vector<double>(static_cast<std::size_t>(n) * 3, 2.0);
    }
};

NOINLINE std::vector<std::string> words(int n)
{
    std::vector<std::string> w;
    for (int i = 0; i < n; i++)
        w.push_back(std::string(20 + (i * 37) % 30, char('a' + i % 26)));
    // the comparator allocates: std::sort's inlined frames around it
    std::sort(w.begin(), w.end(), [](const std::string &a,
                                     const std::string &b) {
        std::string ka = a + "|", kb = b + "|";
        return ka < kb;
    });
    return w;
}

NOINLINE int recurse_fn(const std::function<int(int)> &f, int n)
{
    if (n == 0)
        return f(n);
    std::function<int(int)> g = [&f, n](int x) {
        std::string s(30 + n, 'f');
        return f(x + 1) + static_cast<int>(s.size());
    };
    return recurse_fn(g, n - 1);
}

} // namespace

int main()
{
    int caught = 0;
    for (int seed = 0; seed < 14; seed++) {
        std::map<int, std::string> m;
        try {
            sink += Level<9>::run(m, seed);
        } catch (const Failure &f) {
            std::string note = std::string(f.what()) + "!";
            caught += static_cast<int>(f.trail.size() + note.size() % 2);
        }
    }
    std::vector<Shape *> shapes;
    for (int i = 0; i < 6; i++)
        shapes.push_back(i % 2 ? static_cast<Shape *>(new Square)
                               : static_cast<Shape *>(new Circle));
    for (Shape *s : shapes) {
        sink += s->outline(10).size();
        delete s;
    }
    sink += words(24).size();
    sink += static_cast<unsigned long>(
        recurse_fn([](int x) { return x; }, 12));
    sink += static_cast<unsigned long>(caught);
    return 0;
}
