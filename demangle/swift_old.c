/* SPDX-License-Identifier: MIT */
/* Swift's old mangling (_T, Swift 1-3) parsed into the same node tree as the current one. */
#include "demangle/swift_int.h"

#include <string.h>

typedef struct {
    sw_ctx *c;
    int depth;
} od_t;

static int peek(sw_ctx *c) { return c->pos < c->n ? (unsigned char)c->s[c->pos] : 0; }
static int next(sw_ctx *c) { return c->pos < c->n ? (unsigned char)c->s[c->pos++] : 0; }
static int next_if(sw_ctx *c, int ch) {
    if (peek(c) != ch || ch == 0) return 0;
    c->pos++;
    return 1;
}
static int next_ifs(sw_ctx *c, const char *s) {
    size_t l = strlen(s);
    if (c->n - c->pos < l || memcmp(c->s + c->pos, s, l) != 0) return 0;
    c->pos += l;
    return 1;
}
static int is_digit(int ch) { return ch >= '0' && ch <= '9'; }

static long natural(sw_ctx *c) {
    if (!is_digit(peek(c))) return -1;
    long v = 0;
    while (is_digit(peek(c))) {
        v = v * 10 + (next(c) - '0');
        if (v > 1000000000L) return -1;
    }
    return v;
}

static long dindex(sw_ctx *c) {
    if (next_if(c, '_')) return 0;
    long v = natural(c);
    if (v < 0 || !next_if(c, '_')) return -1;
    return v + 1;
}

static void subst(sw_ctx *c, int n) {
    if (n < 0) return;
    if (c->nsubst >= SW_MAX_SUBST) {
        c->fail = 1;
        return;
    }
    c->subst[c->nsubst++] = n;
}

static int type_of(sw_ctx *c, int n) { return sw_with(c, SW_Type, n); }
static int kind(sw_ctx *c, int n) { return sw_kind_of(c, n); }

/* Bounded recursion: every recursive entry point passes through here. */
#define ENTER(o)                                  \
    do {                                          \
        if (++(o)->depth > SW_MAX_DEPTH) return -1; \
    } while (0)
#define LEAVE(o, r)     \
    do {                \
        (o)->depth--;   \
        return (r);     \
    } while (0)

static int type(od_t *o);
static int type_impl(od_t *o);
static int context(od_t *o);
static int entity(od_t *o);
static int global(od_t *o);
static int protocol_name(od_t *o);
static int generic_signature(od_t *o);
int sw_punycode_utf8(const char *in, size_t n, char *out, size_t cap, size_t *olen);

static int identifier(od_t *o, int k) {
    sw_ctx *c = o->c;
    int puny = next_if(c, 'X');
    int op = 0;
    if (next_if(c, 'o')) {
        if (k != SW_Identifier) return -1;
        switch (next(c)) {
        case 'p': k = SW_PrefixOperator; break;
        case 'P': k = SW_PostfixOperator; break;
        case 'i': k = SW_InfixOperator; break;
        default: return -1;
        }
        op = 1;
    }
    long len = natural(c);
    if (len <= 0 || (size_t)len > c->n - c->pos) return -1;
    const char *t = c->s + c->pos;
    c->pos += (size_t)len;
    char buf[1024];
    size_t n = (size_t)len;
    if (puny) {
        if (!sw_punycode_utf8(t, (size_t)len, buf, sizeof buf, &n) || n == 0) return -1;
        t = buf;
    }
    if (op) {
        static const char table[] = "& @/= >    <*!|+?%-~   ^ .";
        char ob[1024];
        if (n > sizeof ob) return -1;
        for (size_t i = 0; i < n; i++) {
            unsigned char ch = (unsigned char)t[i];
            if (ch >= 0x80) {
                ob[i] = (char)ch;
                continue;
            }
            if (ch < 'a' || ch > 'z' || table[ch - 'a'] == ' ') return -1;
            ob[i] = table[ch - 'a'];
        }
        const char *p = sw_pool_put(c, ob, n);
        return p ? sw_mk_text(c, k, p, n) : -1;
    }
    if (puny) {
        const char *p = sw_pool_put(c, buf, n);
        if (!p) return -1;
        t = p;
    }
    return sw_mk_text(c, k, t, n);
}

static int decl_name(od_t *o) {
    sw_ctx *c = o->c;
    if (next_if(c, 'L')) {
        long d = dindex(c);
        if (d < 0) return -1;
        int name = identifier(o, SW_Identifier);
        return sw_with2(c, SW_LocalDeclName, sw_mk_index(c, SW_Number, (uint64_t)d), name);
    }
    if (next_if(c, 'P')) {
        int disc = identifier(o, SW_Identifier);
        int name = identifier(o, SW_Identifier);
        return sw_with2(c, SW_PrivateDeclName, disc, name);
    }
    return identifier(o, SW_Identifier);
}

static int swift_type(sw_ctx *c, int k, const char *name) {
    return sw_with2(c, k, sw_mk_text(c, SW_Module, "Swift", 5), sw_mk_text(c, SW_Identifier, name, strlen(name)));
}

static int substitution_index(od_t *o) {
    sw_ctx *c = o->c;
    switch (peek(c)) {
    case 'o': next(c); return sw_mk_text(c, SW_Module, "__C", 3);
    case 'C': next(c); return sw_mk_text(c, SW_Module, "__C_Synthesized", 15);
    case 'a': next(c); return swift_type(c, SW_Structure, "Array");
    case 'b': next(c); return swift_type(c, SW_Structure, "Bool");
    case 'c': next(c); return swift_type(c, SW_Structure, "UnicodeScalar");
    case 'd': next(c); return swift_type(c, SW_Structure, "Double");
    case 'f': next(c); return swift_type(c, SW_Structure, "Float");
    case 'i': next(c); return swift_type(c, SW_Structure, "Int");
    case 'V': next(c); return swift_type(c, SW_Structure, "UnsafeRawPointer");
    case 'v': next(c); return swift_type(c, SW_Structure, "UnsafeMutableRawPointer");
    case 'P': next(c); return swift_type(c, SW_Structure, "UnsafePointer");
    case 'p': next(c); return swift_type(c, SW_Structure, "UnsafeMutablePointer");
    case 'q': next(c); return swift_type(c, SW_Enum, "Optional");
    case 'Q': next(c); return swift_type(c, SW_Enum, "ImplicitlyUnwrappedOptional");
    case 'R': next(c); return swift_type(c, SW_Structure, "UnsafeBufferPointer");
    case 'r': next(c); return swift_type(c, SW_Structure, "UnsafeMutableBufferPointer");
    case 'S': next(c); return swift_type(c, SW_Structure, "String");
    case 'u': next(c); return swift_type(c, SW_Structure, "UInt");
    default: break;
    }
    long i = dindex(c);
    if (i < 0 || i >= c->nsubst) return -1;
    return c->subst[i];
}

static int module(od_t *o) {
    sw_ctx *c = o->c;
    if (next_if(c, 'S')) {
        int m = substitution_index(o);
        return kind(c, m) == SW_Module ? m : -1;
    }
    if (next_if(c, 's')) return sw_mk_text(c, SW_Module, "Swift", 5);
    int m = identifier(o, SW_Module);
    subst(c, m);
    return m;
}

static int declaration_name(od_t *o, int k) {
    sw_ctx *c = o->c;
    int ctx = context(o);
    if (ctx < 0) return -1;
    int name = decl_name(o);
    int d = sw_with2(c, k, ctx, name);
    subst(c, d);
    return d;
}

static int nominal_type(od_t *o) {
    sw_ctx *c = o->c;
    switch (next(c)) {
    case 'S': return substitution_index(o);
    case 'V': return declaration_name(o, SW_Structure);
    case 'O': return declaration_name(o, SW_Enum);
    case 'C': return declaration_name(o, SW_Class);
    case 'P': return declaration_name(o, SW_Protocol);
    default: return -1;
    }
}

static int bound_generic_args(od_t *o, int nominal) {
    ENTER(o);
    sw_ctx *c = o->c;
    if (nominal < 0 || c->nodes[nominal].nkids == 0) LEAVE(o, -1);
    int parent = sw_child(c, nominal, 0);
    int pk = kind(c, parent);
    if (pk != SW_Module && pk != SW_Function && pk != SW_Extension) {
        parent = bound_generic_args(o, parent);
        if (parent < 0) LEAVE(o, -1);
        nominal = sw_with2(c, kind(c, nominal), parent, sw_child(c, nominal, 1));
        if (nominal < 0) LEAVE(o, -1);
    }
    int args = sw_mk(c, SW_TypeList);
    while (!next_if(c, '_')) {
        int t = type(o);
        if (t < 0 || c->pos >= c->n) LEAVE(o, -1);
        sw_add(c, args, t);
    }
    if (args < 0) LEAVE(o, -1);
    if (c->nodes[args].nkids == 0) LEAVE(o, nominal);
    int k;
    switch (kind(c, nominal)) {
    case SW_Class: k = SW_BoundGenericClass; break;
    case SW_Structure: k = SW_BoundGenericStructure; break;
    case SW_Enum: k = SW_BoundGenericEnum; break;
    default: LEAVE(o, -1);
    }
    LEAVE(o, sw_with2(c, k, type_of(c, nominal), args));
}

static int bound_generic_type(od_t *o) { return bound_generic_args(o, nominal_type(o)); }

static int is_start_of_nominal(int ch) { return ch == 'C' || ch == 'V' || ch == 'O'; }
static int is_start_of_entity(int ch) {
    return ch == 'F' || ch == 'I' || ch == 'v' || ch == 'P' || ch == 's' || ch == 'Z' || is_start_of_nominal(ch);
}

static int context(od_t *o) {
    ENTER(o);
    sw_ctx *c = o->c;
    int r;
    if (next_if(c, 'E')) {
        int m = module(o);
        if (m < 0) LEAVE(o, -1);
        int t = context(o);
        r = sw_with2(c, SW_Extension, m, t);
    } else if (next_if(c, 'e')) {
        int m = module(o);
        if (m < 0) LEAVE(o, -1);
        int sig = generic_signature(o);
        if (sig < 0) LEAVE(o, -1);
        int t = context(o);
        r = sw_add(c, sw_with2(c, SW_Extension, m, t), sig);
    } else if (next_if(c, 'S')) {
        r = substitution_index(o);
    } else if (next_if(c, 's')) {
        r = sw_mk_text(c, SW_Module, "Swift", 5);
    } else if (next_if(c, 'G')) {
        r = bound_generic_type(o);
    } else if (is_start_of_entity(peek(c))) {
        r = entity(o);
    } else {
        r = module(o);
    }
    LEAVE(o, r);
}

static int protocol_name_given(od_t *o, int ctx) {
    int name = decl_name(o);
    int p = sw_with2(o->c, SW_Protocol, ctx, name);
    subst(o->c, p);
    return p;
}

static int protocol_name_impl(od_t *o) {
    sw_ctx *c = o->c;
    if (next_if(c, 'S')) {
        int s = substitution_index(o);
        if (kind(c, s) == SW_Protocol) return s;
        if (kind(c, s) != SW_Module) return -1;
        return protocol_name_given(o, s);
    }
    if (next_if(c, 's')) return protocol_name_given(o, sw_mk_text(c, SW_Module, "Swift", 5));
    return declaration_name(o, SW_Protocol);
}

static int protocol_name(od_t *o) { return type_of(o->c, protocol_name_impl(o)); }

static int generic_param(sw_ctx *c, uint64_t d, uint64_t i) {
    return sw_with2(c, SW_DependentGenericParamType, sw_mk_index(c, SW_Index, d), sw_mk_index(c, SW_Index, i));
}

static int generic_param_index(od_t *o) {
    sw_ctx *c = o->c;
    if (next_if(c, 'd')) {
        long d = dindex(c);
        if (d < 0) return -1;
        long i = dindex(c);
        if (i < 0) return -1;
        return generic_param(c, (uint64_t)d + 1, (uint64_t)i);
    }
    if (next_if(c, 'x')) return generic_param(c, 0, 0);
    long i = dindex(c);
    if (i < 0) return -1;
    return generic_param(c, 0, (uint64_t)i + 1);
}

static int dependent_member_name(od_t *o, int base) {
    sw_ctx *c = o->c;
    int at;
    if (next_if(c, 'S')) {
        at = substitution_index(o);
        if (kind(c, at) != SW_DependentAssociatedTypeRef) return -1;
    } else {
        int proto = -1;
        if (next_if(c, 'P')) {
            proto = protocol_name(o);
            if (proto < 0) return -1;
        }
        int id = identifier(o, SW_Identifier);
        if (id < 0) return -1;
        at = sw_with(c, SW_DependentAssociatedTypeRef, id);
        if (proto >= 0) sw_add(c, at, proto);
        subst(c, at);
    }
    return sw_with2(c, SW_DependentMemberType, base, at);
}

static int assoc_simple(od_t *o) {
    int base = generic_param_index(o);
    if (base < 0) return -1;
    return dependent_member_name(o, type_of(o->c, base));
}

static int assoc_compound(od_t *o) {
    int base = generic_param_index(o);
    if (base < 0) return -1;
    int guard = 0;
    while (!next_if(o->c, '_')) {
        if (++guard > 64) return -1;
        base = dependent_member_name(o, type_of(o->c, base));
        if (base < 0) return -1;
    }
    return base;
}

static int generic_requirement(od_t *o) {
    sw_ctx *c = o->c;
    int ct;
    if (next_if(c, 'w')) ct = assoc_simple(o);
    else if (next_if(c, 'W')) ct = assoc_compound(o);
    else ct = generic_param_index(o);
    if (ct < 0) return -1;
    ct = type_of(c, ct);
    if (next_if(c, 'z')) return sw_with2(c, SW_DependentGenericSameTypeRequirement, ct, type(o));
    if (next_if(c, 'l')) {
        int ch = next(c);
        long size = -1, align = -1;
        switch (ch) {
        case 'U': case 'R': case 'N': case 'T': break;
        case 'E': case 'M':
            size = natural(c);
            if (size < 0 || !next_if(c, '_')) return -1;
            align = natural(c);
            if (align < 0) return -1;
            break;
        case 'e': case 'm':
            size = natural(c);
            if (size < 0) return -1;
            break;
        default: return -1;
        }
        int req = sw_with2(c, SW_DependentGenericLayoutRequirement, ct,
                           sw_mk_text(c, SW_Identifier, c->s + c->pos - 1, 1));
        if (size >= 0) {
            /* the layout letter, not the last digit */
            int l = sw_child(c, req, 1);
            if (l >= 0) c->nodes[l].text = strchr("EMem", ch), c->nodes[l].tlen = 1;
            sw_add(c, req, sw_mk_index(c, SW_Number, (uint64_t)size));
            if (align >= 0) sw_add(c, req, sw_mk_index(c, SW_Number, (uint64_t)align));
        }
        return req;
    }
    int constraint;
    if (peek(c) == 'C') {
        constraint = type(o);
    } else if (peek(c) == 'S') {
        next(c);
        int s = substitution_index(o);
        int tn;
        if (kind(c, s) == SW_Protocol || kind(c, s) == SW_Class) tn = s;
        else if (kind(c, s) == SW_Module) tn = protocol_name_given(o, s);
        else return -1;
        constraint = type_of(c, tn);
    } else {
        constraint = protocol_name(o);
    }
    return sw_with2(c, SW_DependentGenericConformanceRequirement, ct, constraint);
}

/* An index whose number wraps around as Swift's reader does (counts only: the printer caps
 * what it shows). */
static int wrapping_index(sw_ctx *c, uint64_t *v) {
    if (next_if(c, '_')) {
        *v = 0;
        return 1;
    }
    if (!is_digit(peek(c))) return 0;
    uint64_t x = 0;
    while (is_digit(peek(c))) x = x * 10 + (uint64_t)(next(c) - '0');
    if (!next_if(c, '_')) return 0;
    *v = x + 1;
    return 1;
}

static int generic_signature(od_t *o) {
    ENTER(o);
    sw_ctx *c = o->c;
    int sig = sw_mk(c, SW_DependentGenericSignature);
    int any = 0;
    while (peek(c) != 'R' && peek(c) != 'r') {
        uint64_t cnt;
        if (next_if(c, 'z')) cnt = 0;
        else {
            if (!wrapping_index(c, &cnt)) LEAVE(o, -1);
            cnt += 1;
        }
        sw_add(c, sig, sw_mk_index(c, SW_DependentGenericParamCount, (uint64_t)cnt));
        any = 1;
        if (c->fail) LEAVE(o, -1);
    }
    if (!any) sw_add(c, sig, sw_mk_index(c, SW_DependentGenericParamCount, 1));
    if (next_if(c, 'r')) LEAVE(o, sig);
    if (!next_if(c, 'R')) LEAVE(o, -1);
    while (!next_if(c, 'r')) {
        int r = generic_requirement(o);
        if (r < 0 || c->fail) LEAVE(o, -1);
        sw_add(c, sig, r);
    }
    LEAVE(o, sig);
}

static int function_type(od_t *o, int k) {
    sw_ctx *c = o->c;
    int throws_ = next_if(c, 'z');
    int in = type(o);
    if (in < 0) return -1;
    int out = type(o);
    if (out < 0) return -1;
    int f = sw_mk(c, k);
    if (throws_) sw_add(c, f, sw_mk(c, SW_ThrowsAnnotation));
    int args = sw_with(c, SW_ArgumentTuple, in);
    int k2 = kind(c, sw_child(c, in, 0));
    if (args >= 0) c->nodes[args].index = k2 == SW_Tuple ? c->nodes[sw_child(c, in, 0)].nkids : 1;
    f = sw_add(c, f, args);
    return sw_add(c, f, sw_with(c, SW_ReturnType, out));
}

static int tuple(od_t *o, int variadic) {
    sw_ctx *c = o->c;
    int t = sw_mk(c, SW_Tuple);
    int el = -1;
    while (!next_if(c, '_')) {
        if (c->pos >= c->n || c->fail) return -1;
        el = sw_mk(c, SW_TupleElement);
        if (is_digit(peek(c)) || peek(c) == 'o') {
            int l = identifier(o, SW_TupleElementName);
            if (l < 0) return -1;
            sw_add(c, el, l);
        }
        int ty = type(o);
        if (ty < 0) return -1;
        sw_add(c, el, ty);
        sw_add(c, t, el);
    }
    if (variadic && el >= 0) sw_add(c, el, sw_mk(c, SW_VariadicMarker));
    return t;
}

static int protocol_list(od_t *o) {
    sw_ctx *c = o->c;
    int tl = sw_mk(c, SW_TypeList);
    int pl = sw_with(c, SW_ProtocolList, tl);
    while (!next_if(c, '_')) {
        int p = protocol_name(o);
        if (p < 0 || c->fail) return -1;
        sw_add(c, tl, p);
    }
    return pl;
}

static const char *impl_conv(int ch, int ctxt) { /* ctxt 0 param, 1 result */
    switch (ch) {
    case 'a': return ctxt ? "@autoreleased" : NULL;
    case 'd': return "@unowned";
    case 'D': return ctxt ? "@unowned_inner_pointer" : NULL;
    case 'g': return ctxt ? NULL : "@guaranteed";
    case 'e': return ctxt ? NULL : "@deallocating";
    case 'i': return ctxt ? "@out" : "@in";
    case 'l': return ctxt ? NULL : "@inout";
    case 'o': return "@owned";
    default: return NULL;
    }
}

static int impl_param_or_result(od_t *o, int k) {
    sw_ctx *c = o->c;
    if (next_if(c, 'z')) {
        if (k != SW_ImplResult) return -1;
        k = SW_ImplErrorResult;
    }
    const char *conv = impl_conv(next(c), k != SW_ImplParameter);
    if (!conv) return -1;
    int t = type(o);
    if (t < 0) return -1;
    return sw_with2(c, k, sw_mk_text(c, SW_ImplConvention, conv, strlen(conv)), t);
}

static int impl_function_type(od_t *o) {
    sw_ctx *c = o->c;
    int f = sw_mk(c, SW_ImplFunctionType);
    const char *cc;
    switch (next(c)) {
    case 't': cc = "@convention(thin)"; break;
    case 'o': cc = "@callee_owned"; break;
    case 'd': cc = "@callee_unowned"; break;
    case 'g': cc = "@callee_guaranteed"; break;
    default: return -1;
    }
    sw_add(c, f, sw_mk_text(c, SW_ImplConvention, cc, strlen(cc)));
    if (next_if(c, 'C')) {
        const char *fc;
        switch (next(c)) {
        case 'b': fc = "block"; break;
        case 'c': fc = "c"; break;
        case 'm': fc = "method"; break;
        case 'O': fc = "objc_method"; break;
        case 'w': fc = "witness_method"; break;
        default: return -1;
        }
        sw_add(c, f, sw_with(c, SW_ImplFunctionConvention, sw_mk_text(c, SW_ImplFunctionConventionName, fc, strlen(fc))));
    }
    if (next_if(c, 'h')) sw_add(c, f, sw_mk_text(c, SW_ImplFunctionAttribute, "@Sendable", 9));
    if (next_if(c, 'H')) sw_add(c, f, sw_mk_text(c, SW_ImplFunctionAttribute, "@async", 6));
    if (next_if(c, 'G') || next_if(c, 'g')) {
        int sig = generic_signature(o);
        if (sig < 0) return -1;
        sw_add(c, f, sig);
    }
    if (!next_if(c, '_')) return -1;
    while (!next_if(c, '_')) {
        int p = impl_param_or_result(o, SW_ImplParameter);
        if (p < 0 || c->fail) return -1;
        sw_add(c, f, p);
    }
    while (!next_if(c, '_')) {
        int p = impl_param_or_result(o, SW_ImplResult);
        if (p < 0 || c->fail) return -1;
        sw_add(c, f, p);
    }
    return f;
}

static int builtin_size(sw_ctx *c) {
    long s = natural(c);
    if (s <= 0 || s > 4096 || !next_if(c, '_')) return -1;
    return (int)s;
}

static int builtin_name(sw_ctx *c, const char *a, long n1, const char *b, long n2) {
    char buf[96];
    size_t l = 0;
    const char *parts[2] = {a, b};
    long nums[2] = {n1, n2};
    for (int i = 0; i < 2; i++) {
        if (parts[i]) {
            size_t pl = strlen(parts[i]);
            memcpy(buf + l, parts[i], pl);
            l += pl;
        }
        if (nums[i] >= 0) {
            char d[12];
            int nd = 0;
            long v = nums[i];
            do d[nd++] = (char)('0' + v % 10), v /= 10;
            while (v);
            while (nd) buf[l++] = d[--nd];
        }
    }
    const char *t = sw_pool_put(c, buf, l);
    return t ? sw_mk_text(c, SW_BuiltinTypeName, t, l) : -1;
}

static int type_impl(od_t *o) {
    sw_ctx *c = o->c;
    int ch = next(c);
    switch (ch) {
    case 'B': {
        int b = next(c);
        switch (b) {
        case 'b': return sw_mk_text(c, SW_BuiltinTypeName, "Builtin.BridgeObject", 20);
        case 'B': return sw_mk_text(c, SW_BuiltinTypeName, "Builtin.UnsafeValueBuffer", 25);
        case 'f': { int s = builtin_size(c); return s < 0 ? -1 : builtin_name(c, "Builtin.FPIEEE", s, NULL, -1); }
        case 'i': { int s = builtin_size(c); return s < 0 ? -1 : builtin_name(c, "Builtin.Int", s, NULL, -1); }
        case 'v': {
            long elts = natural(c);
            if (elts <= 0 || elts > 4096 || !next_if(c, 'B')) return -1;
            if (next_if(c, 'i')) { int s = builtin_size(c); return s < 0 ? -1 : builtin_name(c, "Builtin.Vec", elts, "xInt", s); }
            if (next_if(c, 'f')) { int s = builtin_size(c); return s < 0 ? -1 : builtin_name(c, "Builtin.Vec", elts, "xFPIEEE", s); }
            if (next_if(c, 'p')) return builtin_name(c, "Builtin.Vec", elts, "xRawPointer", -1);
            return -1;
        }
        case 'O': return sw_mk_text(c, SW_BuiltinTypeName, "Builtin.UnknownObject", 21);
        case 'o': return sw_mk_text(c, SW_BuiltinTypeName, "Builtin.NativeObject", 20);
        case 'p': return sw_mk_text(c, SW_BuiltinTypeName, "Builtin.RawPointer", 18);
        case 't': return sw_mk_text(c, SW_BuiltinTypeName, "Builtin.SILToken", 16);
        case 'w': return sw_mk_text(c, SW_BuiltinTypeName, "Builtin.Word", 12);
        default: return -1;
        }
    }
    case 'a': return declaration_name(o, SW_TypeAlias);
    case 'b': return function_type(o, SW_ObjCBlock);
    case 'c': return function_type(o, SW_CFunctionPointer);
    case 'D': return sw_with(c, SW_DynamicSelf, type(o));
    case 'E':
        if (!next_if(c, 'R') || !next_if(c, 'R')) return -1;
        return sw_mk(c, SW_ErrorType);
    case 'F': return function_type(o, SW_FunctionType);
    case 'f': return function_type(o, SW_UncurriedFunctionType);
    case 'G': return bound_generic_type(o);
    case 'K': return function_type(o, SW_AutoClosureType);
    case 'M': return sw_with(c, SW_Metatype, type(o));
    case 'P':
        if (next_if(c, 'M')) return sw_with(c, SW_ExistentialMetatype, type(o));
        return protocol_list(o);
    case 'Q':
        if (next_if(c, 'u')) return sw_mk(c, SW_OpaqueReturnType);
        return -1;
    case 'q': {
        int p = peek(c);
        if (p != 'd' && p != '_' && !is_digit(p)) return -1;
        return generic_param_index(o);
    }
    case 'x': return generic_param(c, 0, 0);
    case 'w': return assoc_simple(o);
    case 'W': return assoc_compound(o);
    case 'R': return sw_with(c, SW_InOut, type_impl(o));
    case 'S': return substitution_index(o);
    case 'T': return tuple(o, 0);
    case 't': return tuple(o, 1);
    case 'u': {
        int sig = generic_signature(o);
        if (sig < 0) return -1;
        return sw_with2(c, SW_DependentGenericType, sig, type(o));
    }
    case 'X':
        switch (next(c)) {
        case 'f': return function_type(o, SW_ThinFunctionType);
        case 'o': return sw_with(c, SW_Unowned, type(o));
        case 'u': return sw_with(c, SW_Unmanaged, type(o));
        case 'w': return sw_with(c, SW_Weak, type(o));
        case 'b': return sw_with(c, SW_SILBoxType, type(o));
        case 'F': return impl_function_type(o);
        default: return -1;
        }
    default:
        if (is_start_of_nominal(ch)) {
            return declaration_name(o, ch == 'C' ? SW_Class : ch == 'V' ? SW_Structure : SW_Enum);
        }
        return -1;
    }
}

static int type(od_t *o) {
    ENTER(o);
    int t = type_impl(o);
    LEAVE(o, type_of(o->c, t));
}

static int entity(od_t *o) {
    ENTER(o);
    sw_ctx *c = o->c;
    int is_static = next_if(c, 'Z');
    int basic;
    if (next_if(c, 'F')) basic = SW_Function;
    else if (next_if(c, 'v')) basic = SW_Variable;
    else if (next_if(c, 'I')) basic = SW_Initializer;
    else if (next_if(c, 'i')) basic = SW_Subscript;
    else LEAVE(o, nominal_type(o));
    int ctx = context(o);
    if (ctx < 0) LEAVE(o, -1);
    int k, has_type = 1, wrap = 0, name = -1;
    int ch = peek(c);
    switch (ch) {
    case 'D': next(c), k = SW_Deallocator, has_type = 0; break;
    case 'd': next(c), k = SW_Destructor, has_type = 0; break;
    case 'e': next(c), k = SW_IVarInitializer, has_type = 0; break;
    case 'E': next(c), k = SW_IVarDestroyer, has_type = 0; break;
    case 'C': next(c), k = SW_Allocator; break;
    case 'c': next(c), k = SW_Constructor; break;
    case 'a': case 'l':
        next(c);
        switch (next(c)) {
        case 'O': k = ch == 'a' ? SW_OwningMutableAddressor : SW_OwningAddressor; break;
        case 'o': k = ch == 'a' ? SW_NativeOwningMutableAddressor : SW_NativeOwningAddressor; break;
        case 'p': k = ch == 'a' ? SW_NativePinningMutableAddressor : SW_NativePinningAddressor; break;
        case 'u': k = ch == 'a' ? SW_UnsafeMutableAddressor : SW_UnsafeAddressor; break;
        default: LEAVE(o, -1);
        }
        wrap = 1, name = decl_name(o);
        break;
    case 'g': next(c), k = SW_Getter, wrap = 1, name = decl_name(o); break;
    case 'G': next(c), k = SW_GlobalGetter, wrap = 1, name = decl_name(o); break;
    case 's': next(c), k = SW_Setter, wrap = 1, name = decl_name(o); break;
    case 'm': next(c), k = SW_MaterializeForSet, wrap = 1, name = decl_name(o); break;
    case 'w': next(c), k = SW_WillSet, wrap = 1, name = decl_name(o); break;
    case 'W': next(c), k = SW_DidSet, wrap = 1, name = decl_name(o); break;
    case 'r': next(c), k = SW_ReadAccessor, wrap = 1, name = decl_name(o); break;
    case 'M': next(c), k = SW_ModifyAccessor, wrap = 1, name = decl_name(o); break;
    case 'U': case 'u': {
        next(c);
        k = ch == 'U' ? SW_ExplicitClosure : SW_ImplicitClosure;
        long i = dindex(c);
        if (i < 0) LEAVE(o, -1);
        name = sw_mk_index(c, SW_Number, (uint64_t)i);
        break;
    }
    default:
        if (basic == SW_Initializer) {
            if (next_if(c, 'A')) {
                k = SW_DefaultArgumentInitializer;
                long i = dindex(c);
                if (i < 0) LEAVE(o, -1);
                name = sw_mk_index(c, SW_Number, (uint64_t)i);
            } else if (next_if(c, 'i')) {
                k = SW_Initializer;
            } else {
                LEAVE(o, -1);
            }
            has_type = 0;
        } else {
            k = basic;
            name = decl_name(o);
            if (name < 0) LEAVE(o, -1);
        }
        break;
    }
    if (wrap && name < 0) LEAVE(o, -1);
    int e = sw_mk(c, k);
    if (wrap) {
        int sub = 0;
        if (kind(c, name) == SW_Identifier && c->nodes[name].tlen == 9 &&
            memcmp(c->nodes[name].text, "subscript", 9) == 0) {
            sub = 1;
            name = -1;
        } else if (kind(c, name) == SW_PrivateDeclName && c->nodes[name].nkids > 1) {
            int id = sw_child(c, name, 1);
            if (c->nodes[id].tlen == 9 && memcmp(c->nodes[id].text, "subscript", 9) == 0) {
                sub = 1;
                name = sw_with(c, SW_PrivateDeclName, sw_child(c, name, 0));
            }
        }
        int w = sw_with(c, sub ? SW_Subscript : SW_Variable, ctx);
        if (!sub) w = sw_add(c, w, name);
        if (has_type) w = sw_add(c, w, type(o));
        if (sub && name >= 0) w = sw_add(c, w, name);
        e = sw_add(c, e, w);
    } else {
        e = sw_add(c, e, ctx);
        if (name >= 0) e = sw_add(c, e, name);
        if (has_type) e = sw_add(c, e, type(o));
    }
    if (is_static) e = sw_with(c, SW_Static, e);
    LEAVE(o, e);
}

static int protocol_conformance(od_t *o) {
    sw_ctx *c = o->c;
    int t = type(o);
    if (t < 0) return -1;
    int p = protocol_name(o);
    if (p < 0) return -1;
    int ctx = context(o);
    if (ctx < 0) return -1;
    return sw_add(c, sw_with2(c, SW_ProtocolConformance, t, p), ctx);
}

static const char *value_witness(int a, int b) {
    static const struct {
        char a, b;
        const char *name;
    } vw[] = {
        {'a', 'l', "allocateBuffer"}, {'c', 'a', "assignWithCopy"}, {'t', 'a', "assignWithTake"},
        {'d', 'e', "deallocateBuffer"}, {'x', 'x', "destroy"}, {'X', 'X', "destroyBuffer"},
        {'X', 'x', "destroyArray"}, {'C', 'P', "initializeBufferWithCopyOfBuffer"},
        {'C', 'p', "initializeBufferWithCopy"}, {'c', 'p', "initializeWithCopy"},
        {'T', 'k', "initializeBufferWithTake"}, {'t', 'k', "initializeWithTake"},
        {'p', 'r', "projectBuffer"}, {'T', 'K', "initializeBufferWithTakeOfBuffer"},
        {'C', 'c', "initializeArrayWithCopy"}, {'T', 't', "initializeArrayWithTakeFrontToBack"},
        {'t', 'T', "initializeArrayWithTakeBackToFront"}, {'x', 's', "storeExtraInhabitant"},
        {'x', 'g', "getExtraInhabitantIndex"}, {'u', 'g', "getEnumTag"},
        {'u', 'p', "destructiveProjectEnumData"}, {'u', 'i', "destructiveInjectEnumTag"},
        {'e', 't', "getEnumTagSinglePayload"}, {'s', 't', "storeEnumTagSinglePayload"},
    };
    for (size_t i = 0; i < sizeof vw / sizeof vw[0]; i++)
        if (vw[i].a == a && vw[i].b == b) return vw[i].name;
    return NULL;
}

static int reabstract_signature(od_t *o, int thunk) {
    sw_ctx *c = o->c;
    if (next_if(c, 'G')) {
        int g = generic_signature(o);
        if (g < 0) return -1;
        sw_add(c, thunk, g);
    }
    int src = type(o);
    if (src < 0) return -1;
    sw_add(c, thunk, src);
    int dst = type(o);
    if (dst < 0) return -1;
    return sw_add(c, thunk, dst);
}

static int func_sig_spec_param(od_t *o, int param);

static int specialized_attribute(od_t *o) {
    sw_ctx *c = o->c;
    int na = 0;
    if (next_if(c, 'g') || (na = next_if(c, 'r'))) {
        int s = sw_mk(c, na ? SW_GenericSpecializationNotReAbstracted : SW_GenericSpecialization);
        if (next_if(c, 'q')) sw_add(c, s, sw_mk(c, SW_IsSerialized));
        int pass = next(c) - '0';
        if (pass < 0 || pass > 9) return -1;
        sw_add(c, s, sw_mk_index(c, SW_SpecializationPassID, (uint64_t)pass));
        while (!next_if(c, '_')) {
            int param = sw_with(c, SW_GenericSpecializationParam, type(o));
            if (param < 0 || c->fail) return -1;
            while (!next_if(c, '_')) {
                int conf = protocol_conformance(o);
                if (conf < 0 || c->fail) return -1;
                sw_add(c, param, conf);
            }
            sw_add(c, s, param);
        }
        return s;
    }
    if (next_if(c, 'f')) {
        int s = sw_mk(c, SW_FunctionSignatureSpecialization);
        if (next_if(c, 'q')) sw_add(c, s, sw_mk(c, SW_IsSerialized));
        int pass = next(c) - '0';
        if (pass < 0 || pass > 9) return -1;
        sw_add(c, s, sw_mk_index(c, SW_SpecializationPassID, (uint64_t)pass));
        uint64_t n = 0;
        while (!next_if(c, '_')) {
            int param = sw_mk_index(c, SW_FunctionSignatureSpecializationParam, n++);
            if (func_sig_spec_param(o, param) < 0 || c->fail) return -1;
            sw_add(c, s, param);
        }
        return s;
    }
    return -1;
}

/* Function signature specialization parameters of the old scheme; the kinds' texts are what
 * the printer shows. */
static int fsig_kind(sw_ctx *c, int param, const char *text) {
    return sw_add(c, param, sw_mk_text(c, SW_FunctionSignatureSpecializationParamKind, text, strlen(text)));
}

static int fsig_payload(sw_ctx *c, int param, const char *t, size_t n) {
    return sw_add(c, param, sw_mk_text(c, SW_FunctionSignatureSpecializationParamPayload, t, n));
}

static int func_sig_spec_param(od_t *o, int param) {
    sw_ctx *c = o->c;
    if (next_if(c, 'n')) return next_if(c, '_') ? param : -1;
    if (next_if(c, 'c')) {
        /* closure or constant propagation */
        if (next_if(c, 'l')) {
            fsig_kind(c, param, "Closure Propagated");
            long len = natural(c);
            if (len <= 0 || (size_t)len > c->n - c->pos) return -1;
            fsig_payload(c, param, c->s + c->pos, (size_t)len);
            c->pos += (size_t)len;
            while (!next_if(c, '_')) {
                int t = type(o);
                if (t < 0 || c->fail) return -1;
                sw_add(c, param, t);
            }
            return param;
        }
        if (next_if(c, 'p')) {
            const char *kt;
            if (next_if(c, 'f')) {
                if (next_if(c, 'r')) kt = "Constant Propagated Function";
                else if (next_if(c, 'l')) kt = "Constant Propagated Float";
                else return -1;
            } else if (next_if(c, 'g')) kt = "Constant Propagated Global";
            else if (next_if(c, 'i')) kt = "Constant Propagated Integer";
            else if (next_if(c, 's')) {
                kt = "Constant Propagated String";
                const char *enc;
                if (next_if(c, 'e')) {
                    if (next_if(c, '0')) enc = "u8";
                    else if (next_if(c, '1')) enc = "u16";
                    else return -1;
                } else return -1;
                fsig_kind(c, param, kt);
                fsig_payload(c, param, enc, strlen(enc));
                if (!next_if(c, 'v')) return -1;
                long len = natural(c);
                if (len < 0 || (size_t)len > c->n - c->pos) return -1;
                fsig_payload(c, param, c->s + c->pos, (size_t)len);
                c->pos += (size_t)len;
                return next_if(c, '_') ? param : -1;
            } else return -1;
            fsig_kind(c, param, kt);
            if (!strcmp(kt, "Constant Propagated Integer") || !strcmp(kt, "Constant Propagated Float")) {
                size_t st = c->pos;
                if (peek(c) == '-') next(c);
                while (is_digit(peek(c)) || peek(c) == '.' || peek(c) == 'e' || peek(c) == 'E' || peek(c) == '+' || peek(c) == '-') next(c);
                fsig_payload(c, param, c->s + st, c->pos - st);
            } else {
                long len = natural(c);
                if (len <= 0 || (size_t)len > c->n - c->pos) return -1;
                fsig_payload(c, param, c->s + c->pos, (size_t)len);
                c->pos += (size_t)len;
            }
            return next_if(c, '_') ? param : -1;
        }
        return -1;
    }
    if (next_if(c, 'i')) {
        fsig_kind(c, param, "Value Promoted from Box");
        return next_if(c, '_') ? param : -1;
    }
    if (next_if(c, 'k')) {
        fsig_kind(c, param, "Stack Promoted from Box");
        return next_if(c, '_') ? param : -1;
    }
    /* option set: dead, owned to guaranteed, guaranteed to owned, exploded */
    int any = 0;
    char buf[128];
    size_t l = 0;
    const char *parts[4];
    int np = 0;
    if (next_if(c, 'd')) parts[np++] = "Dead", any = 1;
    if (next_if(c, 'g')) parts[np++] = "Owned To Guaranteed", any = 1;
    else if (next_if(c, 'o')) parts[np++] = "Guaranteed To Owned", any = 1;
    if (next_if(c, 's')) parts[np++] = "Exploded", any = 1;
    if (!any) return -1;
    for (int i = 0; i < np; i++) {
        if (i) memcpy(buf + l, " and ", 5), l += 5;
        size_t pl = strlen(parts[i]);
        memcpy(buf + l, parts[i], pl);
        l += pl;
    }
    const char *t = sw_pool_put(c, buf, l);
    if (!t) return -1;
    sw_add(c, param, sw_mk_text(c, SW_FunctionSignatureSpecializationParamKind, t, l));
    return next_if(c, '_') ? param : -1;
}

static int global(od_t *o) {
    ENTER(o);
    sw_ctx *c = o->c;
    int r = -1;
    if (c->pos >= c->n) LEAVE(o, -1);
    if (next_if(c, 'M')) {
        int k = SW_TypeMetadata;
        if (next_if(c, 'P')) k = SW_GenericTypeMetadataPattern;
        else if (next_if(c, 'a')) k = SW_TypeMetadataAccessFunction;
        else if (next_if(c, 'L')) k = SW_TypeMetadataLazyCache;
        else if (next_if(c, 'm')) k = SW_Metaclass;
        else if (next_if(c, 'n')) k = SW_NominalTypeDescriptor;
        else if (next_if(c, 'f')) k = SW_FullTypeMetadata;
        else if (next_if(c, 'p')) LEAVE(o, sw_with(c, SW_ProtocolDescriptor, protocol_name(o)));
        LEAVE(o, sw_with(c, k, type(o)));
    }
    if (next_ifs(c, "PA")) {
        int k = next_if(c, 'o') ? SW_PartialApplyObjCForwarder : SW_PartialApplyForwarder;
        int f = sw_mk(c, k);
        if (next_ifs(c, "__T")) f = sw_add(c, f, global(o));
        LEAVE(o, f);
    }
    if (next_if(c, 't')) LEAVE(o, sw_with(c, SW_TypeMangling, type(o)));
    if (next_if(c, 'w')) {
        int a = next(c), b = next(c);
        const char *n = value_witness(a, b);
        if (!n) LEAVE(o, -1);
        LEAVE(o, sw_with2(c, SW_ValueWitness, sw_mk_text(c, SW_Identifier, n, strlen(n)), type(o)));
    }
    if (next_if(c, 'W')) {
        switch (next(c)) {
        case 'V': r = sw_with(c, SW_ValueWitnessTable, type(o)); break;
        case 'v': {
            uint64_t d;
            if (next_if(c, 'd')) d = 0;
            else if (next_if(c, 'i')) d = 1;
            else LEAVE(o, -1);
            r = sw_with2(c, SW_FieldOffset, sw_mk_index(c, SW_Directness, d), entity(o));
            break;
        }
        case 'P': r = sw_with(c, SW_ProtocolWitnessTable, protocol_conformance(o)); break;
        case 'G': r = sw_with(c, SW_GenericProtocolWitnessTable, protocol_conformance(o)); break;
        case 'I': r = sw_with(c, SW_GenericProtocolWitnessTableInstantiationFunction, protocol_conformance(o)); break;
        case 'l': case 'L': {
            int lk = c->s[c->pos - 1] == 'l' ? SW_LazyProtocolWitnessTableAccessor : SW_LazyProtocolWitnessTableCacheVariable;
            int t = type(o);
            r = sw_with2(c, lk, t, protocol_conformance(o));
            break;
        }
        case 'a': r = sw_with(c, SW_ProtocolWitnessTableAccessor, protocol_conformance(o)); break;
        case 't': {
            int conf = protocol_conformance(o);
            r = sw_with2(c, SW_AssociatedTypeMetadataAccessor, conf, decl_name(o));
            break;
        }
        case 'T': {
            int conf = protocol_conformance(o);
            int name = decl_name(o);
            r = sw_add(c, sw_with2(c, SW_AssociatedTypeWitnessTableAccessor, conf, name), protocol_name(o));
            break;
        }
        default: LEAVE(o, -1);
        }
        LEAVE(o, r);
    }
    if (next_if(c, 'T')) {
        if (next_if(c, 'R') || next_if(c, 'r')) {
            int t = sw_mk(c, c->s[c->pos - 1] == 'R' ? SW_ReabstractionThunkHelper : SW_ReabstractionThunk);
            LEAVE(o, reabstract_signature(o, t));
        }
        if (next_if(c, 'W')) {
            int conf = protocol_conformance(o);
            LEAVE(o, sw_with2(c, SW_ProtocolWitness, conf, entity(o)));
        }
        LEAVE(o, -1);
    }
    LEAVE(o, entity(o));
}

int sw_parse_old(sw_ctx *c) {
    od_t o = {c, 0};
    int top = sw_mk(c, SW_Global);
    if (next_ifs(c, "TS")) {
        do {
            int s = specialized_attribute(&o);
            if (s < 0) return -1;
            sw_add(c, top, s);
            c->nsubst = 0; /* the specialization header does not share substitutions */
        } while (next_ifs(c, "_TTS"));
        if (!next_ifs(c, "_T")) return -1;
    } else if (next_ifs(c, "To")) {
        sw_add(c, top, sw_mk(c, SW_ObjCAttribute));
    } else if (next_ifs(c, "TO")) {
        sw_add(c, top, sw_mk(c, SW_NonObjCAttribute));
    } else if (next_ifs(c, "TD")) {
        sw_add(c, top, sw_mk(c, SW_DynamicAttribute));
    } else if (next_ifs(c, "Td")) {
        sw_add(c, top, sw_mk(c, SW_DirectMethodReferenceAttribute));
    } else if (next_ifs(c, "TV")) {
        sw_add(c, top, sw_mk(c, SW_VTableAttribute));
    }
    int g = global(&o);
    if (g < 0 || c->fail) return -1;
    sw_add(c, top, g);
    if (c->pos < c->n) sw_add(c, top, sw_mk_text(c, SW_Suffix, c->s + c->pos, c->n - c->pos));
    return c->fail ? -1 : top;
}
