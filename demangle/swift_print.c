/* SPDX-License-Identifier: MIT */
/* Swift node trees printed the way swift-demangle prints them (default and --simplified). */
#include "demangle/swift_int.h"

#include <string.h>

typedef struct {
    const sw_ctx *c;
    char *out;
    size_t cap;
    size_t len;  /* the length the full text would have */
    long steps;  /* work bound: a tree of shared subtrees can be exponential to print */
    int depth;
    int bad;
    int spec_printed;
    /* options (Swift's DemangleOptions) */
    int simplified;
    long (*nested)(const char *sym, char *out, size_t cap, int simplified);
} pr_t;

enum { PR_MAX_STEPS = 200000, PR_MAX_LEN = 1 << 16 };

static void put(pr_t *p, const char *s, size_t n) {
    if (p->len < p->cap)
        memcpy(p->out + p->len, s, n < p->cap - p->len ? n : p->cap - p->len);
    p->len += n;
    if (p->len > PR_MAX_LEN) p->bad = 1;
}
static void puts_(pr_t *p, const char *s) { put(p, s, strlen(s)); }
static void putc_(pr_t *p, char ch) { put(p, &ch, 1); }
static void putu(pr_t *p, uint64_t v) {
    char d[24];
    int n = 0;
    do d[n++] = (char)('0' + v % 10), v /= 10;
    while (v);
    while (n) putc_(p, d[--n]);
}

#define K(n) sw_kind_of(p->c, (n))
#define CH(n, i) sw_child(p->c, (n), (i))
#define NK(n) ((n) >= 0 ? p->c->nodes[(n)].nkids : 0u)
#define TXT(n) p->c->nodes[(n)].text, p->c->nodes[(n)].tlen
#define IDX(n) p->c->nodes[(n)].index

static int print(pr_t *p, int n, int as_prefix);

static void print_children(pr_t *p, int n, const char *sep) {
    for (unsigned i = 0; i < NK(n) && !p->bad; i++) {
        if (i && sep) puts_(p, sep);
        print(p, CH(n, i), 0);
    }
}

static int child_of_kind(pr_t *p, int n, int kind) {
    for (unsigned i = 0; i < NK(n); i++)
        if (K(CH(n, i)) == kind) return CH(n, i);
    return -1;
}

static int text_is(pr_t *p, int n, const char *s) {
    size_t l = strlen(s);
    return n >= 0 && p->c->nodes[n].tlen == l && memcmp(p->c->nodes[n].text, s, l) == 0;
}

/* ---- type helpers ---- */

static int is_simple_type(pr_t *p, int n) {
    switch (K(n)) {
    case SW_Type: return is_simple_type(p, CH(n, 0));
    case SW_ProtocolList: return NK(CH(n, 0)) <= 1;
    case SW_ProtocolListWithAnyObject: return NK(CH(CH(n, 0), 0)) == 0;
    case SW_ProtocolListWithClass: case SW_FunctionType: case SW_NoEscapeFunctionType:
    case SW_AutoClosureType: case SW_EscapingAutoClosureType: case SW_ThinFunctionType:
    case SW_UncurriedFunctionType: case SW_CFunctionPointer: case SW_ObjCBlock:
    case SW_EscapingObjCBlock: case SW_ImplFunctionType: case SW_DependentGenericType:
    case SW_ConstrainedExistential: case SW_InOut: case SW_Shared: case SW_Owned:
    case SW_Weak: case SW_Unowned: case SW_Unmanaged: case SW_Isolated: case SW_Sending:
    case SW_NoDerivative: case SW_CompileTimeConst: case SW_ExistentialMetatype:
    case SW_Metatype: case SW_SILBoxType:
        return K(n) == SW_Metatype || K(n) == SW_ExistentialMetatype;
    default: return 1;
    }
}

static int need_space_before_type(pr_t *p, int n) {
    switch (K(n)) {
    case SW_Type: return need_space_before_type(p, CH(n, 0));
    case SW_FunctionType: case SW_NoEscapeFunctionType: case SW_UncurriedFunctionType:
    case SW_DependentGenericType:
        return 0;
    default: return 1;
    }
}

static int is_existential(pr_t *p, int n) {
    switch (K(n)) {
    case SW_ExistentialMetatype: case SW_ProtocolList: case SW_ProtocolListWithClass:
    case SW_ProtocolListWithAnyObject:
        return 1;
    default: return 0;
    }
}

static void print_with_parens(pr_t *p, int type) {
    int np = !is_simple_type(p, type);
    if (np) putc_(p, '(');
    print(p, type, 0);
    if (np) putc_(p, ')');
}

/* ---- functions ---- */

static void print_function_params(pr_t *p, int labels, int args, int show_types) {
    if (K(args) != SW_ArgumentTuple) {
        p->bad = 1;
        return;
    }
    int params = CH(CH(args, 0), 0);
    if (K(params) != SW_Tuple) {
        if (show_types) {
            putc_(p, '(');
            print(p, params, 0);
            putc_(p, ')');
        } else {
            puts_(p, "(_:)");
        }
        return;
    }
    int has_labels = labels >= 0 && NK(labels) > 0;
    putc_(p, '(');
    for (unsigned i = 0; i < NK(params) && !p->bad; i++) {
        int el = CH(params, i);
        if (i && show_types) puts_(p, ", ");
        if (has_labels) {
            int l = CH(labels, i);
            if (K(l) == SW_Identifier) put(p, TXT(l));
            else putc_(p, '_');
            putc_(p, ':');
            if (show_types) putc_(p, ' ');
        } else if (!show_types) {
            int l = child_of_kind(p, el, SW_TupleElementName);
            if (l >= 0) put(p, TXT(l)), putc_(p, ':');
            else puts_(p, "_:");
        }
        if (show_types) print(p, el, 0);
    }
    putc_(p, ')');
}

static void print_function_type(pr_t *p, int labels, int n) {
    if (NK(n) < 2) {
        p->bad = 1;
        return;
    }
    switch (K(n)) {
    case SW_AutoClosureType: case SW_EscapingAutoClosureType: puts_(p, "@autoclosure "); break;
    case SW_ThinFunctionType: puts_(p, "@convention(thin) "); break;
    case SW_CFunctionPointer: puts_(p, "@convention(c) "); break;
    case SW_ObjCBlock: puts_(p, "@convention(block) "); break;
    case SW_EscapingObjCBlock: puts_(p, "@escaping @convention(block) "); break;
    default: break;
    }
    unsigned args = NK(n) - 2, i = 0;
    int sendable = 0, async = 0, throws_ = -1, sending = 0, self_dep = -1;
    uint64_t diff = 0;
    for (; i < args; i++) {
        int ch = CH(n, i);
        switch (K(ch)) {
        case SW_SendingResultFunctionType: sending = 1; break;
        case SW_SelfLifetimeDependence: self_dep = ch; break;
        case SW_IsolatedAnyFunctionType: puts_(p, "@isolated(any) "); break;
        case SW_GlobalActorFunctionType:
            putc_(p, '@');
            print(p, CH(ch, 0), 0);
            putc_(p, ' ');
            break;
        case SW_DifferentiableFunctionType: diff = IDX(ch); break;
        case SW_ThrowsAnnotation: case SW_TypedThrowsAnnotation: throws_ = ch; break;
        case SW_ConcurrentFunctionType: sendable = 1; break;
        case SW_AsyncAnnotation: async = 1; break;
        default: break;
        }
    }
    switch (diff) {
    case 'f': puts_(p, "@differentiable(_forward) "); break;
    case 'r': puts_(p, "@differentiable(reverse) "); break;
    case 'l': puts_(p, "@differentiable(_linear) "); break;
    case 'd': puts_(p, "@differentiable "); break;
    default: break;
    }
    if (sendable) puts_(p, "@Sendable ");
    if (self_dep >= 0) {
        puts_(p, IDX(self_dep) == 's' ? "(self lifetime dependence: scope) " : "(self lifetime dependence: inherit) ");
    }
    print_function_params(p, labels, CH(n, args), !p->simplified);
    if (p->simplified) return;
    if (async) puts_(p, " async");
    if (throws_ >= 0) print(p, throws_, 0);
    int ret = CH(n, args + 1);
    puts_(p, " -> ");
    if (sending) puts_(p, "transferring ");
    print_children(p, ret, NULL);
}

static int is_fn_type_kind(int k) {
    return k == SW_FunctionType || k == SW_NoEscapeFunctionType || k == SW_UncurriedFunctionType ||
           k == SW_CFunctionPointer || k == SW_ThinFunctionType;
}

static void print_entity_type(pr_t *p, int entity, int type, int gen_list) {
    int labels = child_of_kind(p, entity, SW_LabelList);
    if (labels >= 0 || gen_list >= 0) {
        if (gen_list >= 0) {
            putc_(p, '<');
            print_children(p, gen_list, ", ");
            putc_(p, '>');
        }
        if (K(type) == SW_DependentGenericType) {
            if (gen_list < 0) print(p, CH(type, 0), 0);
            int dep = CH(type, 1);
            if (need_space_before_type(p, dep)) putc_(p, ' ');
            type = CH(dep, 0);
        }
        print_function_type(p, labels, type);
    } else {
        print(p, type, 0);
    }
}

static int print_context(pr_t *p, int ctx) {
    if (K(ctx) == SW_Module && p->simplified) return 0;
    return 1;
}

enum { TP_NONE, TP_COLON, TP_FUNC };

static int print_entity(pr_t *p, int e, int as_prefix, int tp, int has_name, const char *extra,
                        long extra_index, const char *overwrite) {
    int gen_list = -1;
    if (K(e) == SW_BoundGenericFunction) {
        gen_list = CH(e, 1);
        e = CH(e, 0);
    }
    int multi = extra && strchr(extra, ' ') != NULL;
    int local = has_name && K(CH(e, 1)) == SW_LocalDeclName;
    if (local) multi = 1;
    if (p->simplified && tp == TP_FUNC && (K(e) == SW_ExplicitClosure || K(e) == SW_ImplicitClosure))
        tp = TP_NONE;
    if (as_prefix && (tp != TP_NONE || multi)) return e;
    int postfix = -1;
    int ctx = CH(e, 0);
    if (print_context(p, ctx)) {
        if (multi) {
            postfix = ctx;
        } else {
            size_t at = p->len;
            postfix = print(p, ctx, 1);
            if (p->len != at) putc_(p, '.');
        }
    }
    if (has_name || overwrite) {
        if (extra && multi) {
            puts_(p, extra);
            if (extra_index >= 0) putu(p, (uint64_t)extra_index);
            puts_(p, " of ");
            extra = NULL;
            extra_index = -1;
        }
        size_t at = p->len;
        if (overwrite) {
            puts_(p, overwrite);
        } else {
            int name = CH(e, 1);
            if (K(name) != SW_PrivateDeclName) print(p, name, 0);
            int priv = child_of_kind(p, e, SW_PrivateDeclName);
            if (priv >= 0) print(p, priv, 0);
        }
        if (p->len != at && extra) putc_(p, '.');
    }
    if (extra) {
        puts_(p, extra);
        if (extra_index >= 0) putu(p, (uint64_t)extra_index);
    }
    if (tp != TP_NONE) {
        int type = child_of_kind(p, e, SW_Type);
        if (type < 0) {
            p->bad = 1;
            return -1;
        }
        type = CH(type, 0);
        if (tp == TP_FUNC) {
            int t = type;
            while (K(t) == SW_DependentGenericType) t = CH(CH(t, 1), 0);
            if (!is_fn_type_kind(K(t))) tp = TP_COLON;
        }
        if (tp == TP_COLON) {
            if (!p->simplified) {
                puts_(p, " : ");
                print_entity_type(p, e, type, gen_list);
            }
        } else {
            if (multi || need_space_before_type(p, type)) putc_(p, ' ');
            print_entity_type(p, e, type, gen_list);
        }
    }
    if (!as_prefix && postfix >= 0) {
        int k = K(e);
        if (k == SW_DefaultArgumentInitializer || k == SW_Initializer ||
            k == SW_PropertyWrapperBackingInitializer || k == SW_PropertyWrapperInitFromProjectedValue)
            puts_(p, " of ");
        else
            puts_(p, " in ");
        print(p, postfix, 0);
        postfix = -1;
    }
    return postfix;
}

static int print_storage(pr_t *p, int n, int as_prefix, const char *extra) {
    switch (K(n)) {
    case SW_Variable: return print_entity(p, n, as_prefix, TP_COLON, 1, extra, -1, NULL);
    case SW_Subscript: return print_entity(p, n, as_prefix, TP_COLON, 0, extra, -1, "subscript");
    default: p->bad = 1; return -1;
    }
}

/* ---- generics ---- */

static void param_name(pr_t *p, uint64_t depth, uint64_t index) {
    char b[24];
    int n = 0;
    do b[n++] = (char)('A' + index % 26), index /= 26;
    while (index && n < 20);
    put(p, b, (size_t)n);
    if (depth) putu(p, depth);
}

static void print_generic_signature(pr_t *p, int n) {
    unsigned nk = NK(n), levels = 0;
    while (levels < nk && K(CH(n, levels)) == SW_DependentGenericParamCount) levels++;
    for (unsigned d = 0; d < levels; d++) {
        putc_(p, '<');
        uint64_t cnt = IDX(CH(n, d));
        for (uint64_t i = 0; i < cnt; i++) {
            if (i) puts_(p, ", ");
            if (i >= 128) {
                puts_(p, "...");
                break;
            }
            param_name(p, d, i);
        }
        if (d + 1 != levels) putc_(p, '>');
    }
    if (levels != nk && !p->simplified) {
        if (!levels) putc_(p, '<');
        puts_(p, " where ");
        for (unsigned i = levels; i < nk; i++) {
            if (i > levels) puts_(p, ", ");
            print(p, CH(n, i), 0);
        }
    } else if (!levels) {
        return;
    }
    putc_(p, '>');
}

/* ---- sugar ---- */

static int swift_named(pr_t *p, int n, const char *name) {
    /* n: a Type node wrapping a nominal in module Swift */
    int nom = CH(n, 0);
    return text_is(p, CH(nom, 0), "Swift") && K(CH(nom, 0)) == SW_Module && text_is(p, CH(nom, 1), name);
}

static void print_bound_generic_nosugar(pr_t *p, int n) {
    print(p, CH(n, 0), 0);
    putc_(p, '<');
    print_children(p, CH(n, 1), ", ");
    putc_(p, '>');
}

static void print_bound_generic(pr_t *p, int n) {
    if (NK(n) < 2) return;
    if (NK(n) != 2 || K(n) == SW_BoundGenericClass) {
        print_bound_generic_nosugar(p, n);
        return;
    }
    if (K(n) == SW_BoundGenericProtocol) {
        print_children(p, CH(n, 1), NULL);
        puts_(p, " as ");
        print(p, CH(n, 0), 0);
        return;
    }
    int t = CH(n, 0), args = CH(n, 1);
    int nom = CH(t, 0);
    if (K(n) == SW_BoundGenericEnum && K(nom) == SW_Enum && NK(args) == 1) {
        if (swift_named(p, t, "Optional") || swift_named(p, t, "ImplicitlyUnwrappedOptional")) {
            print_with_parens(p, CH(args, 0));
            putc_(p, swift_named(p, t, "Optional") ? '?' : '!');
            return;
        }
    }
    if (K(n) == SW_BoundGenericStructure && K(nom) == SW_Structure) {
        if (NK(args) == 1 && swift_named(p, t, "Array")) {
            putc_(p, '[');
            print(p, CH(args, 0), 0);
            putc_(p, ']');
            return;
        }
        if (NK(args) == 2 && swift_named(p, t, "Dictionary")) {
            putc_(p, '[');
            print(p, CH(args, 0), 0);
            puts_(p, " : ");
            print(p, CH(args, 1), 0);
            putc_(p, ']');
            return;
        }
    }
    print_bound_generic_nosugar(p, n);
}

/* ---- specializations ---- */

static void print_spec_prefix(pr_t *p, int n, const char *desc) {
    if (p->simplified) {
        if (!p->spec_printed) puts_(p, "specialized ");
        p->spec_printed = 1;
        return;
    }
    puts_(p, desc);
    puts_(p, " <");
    const char *sep = "";
    unsigned argn = 0;
    for (unsigned i = 0; i < NK(n); i++) {
        int ch = CH(n, i);
        switch (K(ch)) {
        case SW_SpecializationPassID: case SW_DroppedArgument: break;
        case SW_IsSerialized:
            puts_(p, sep);
            sep = ", ";
            puts_(p, "serialized");
            break;
        case SW_MetatypeParamsRemoved: case SW_AsyncRemoved: break;
        default:
            if (NK(ch)) {
                puts_(p, sep);
                sep = ", ";
                if (K(ch) == SW_FunctionSignatureSpecializationParam) {
                    puts_(p, "Arg[");
                    putu(p, argn);
                    puts_(p, "] = ");
                    print(p, ch, 0);
                } else if (K(ch) == SW_FunctionSignatureSpecializationReturn) {
                    puts_(p, "Return = ");
                    print(p, ch, 0);
                } else {
                    print(p, ch, 0);
                }
            }
            argn++;
            break;
        }
    }
    puts_(p, "> of ");
}

/* A payload that is itself a symbol is shown demangled (one level deep: the nested call
 * gets no further nesting, which bounds the stack). */
static void print_payload(pr_t *p, int n) {
    char sym[512], out[1024];
    size_t l = p->c->nodes[n].tlen;
    if (p->nested && l < sizeof sym) {
        memcpy(sym, p->c->nodes[n].text, l);
        sym[l] = 0;
        long r = p->nested(sym, out, sizeof out, p->simplified);
        if (r > 0 && (size_t)r < sizeof out - 1) {
            put(p, out, (size_t)r);
            return;
        }
    }
    put(p, TXT(n));
}

static int starts_with(pr_t *p, int n, const char *s) {
    size_t l = strlen(s);
    return n >= 0 && p->c->nodes[n].tlen >= l && memcmp(p->c->nodes[n].text, s, l) == 0;
}

static void print_fsig_param(pr_t *p, int n) {
    unsigned i = 0, nk = NK(n);
    while (i < nk && !p->bad) {
        int kind = CH(n, i);
        if (!starts_with(p, kind, "Constant") && !starts_with(p, kind, "Closure")) {
            print(p, CH(n, i++), 0);
            continue;
        }
        putc_(p, '[');
        print(p, CH(n, i++), 0);
        puts_(p, " : ");
        if (starts_with(p, kind, "Constant Propagated String")) {
            print(p, CH(n, i++), 0);
            putc_(p, '\'');
            print(p, CH(n, i++), 0);
            putc_(p, '\'');
        } else if (starts_with(p, kind, "Constant Propagated KeyPath")) {
            print(p, CH(n, i++), 0);
            putc_(p, '<');
            print(p, CH(n, i++), 0);
            putc_(p, ',');
            print(p, CH(n, i++), 0);
            putc_(p, '>');
        } else if (starts_with(p, kind, "Closure")) {
            print(p, CH(n, i++), 0);
            puts_(p, ", Argument Types : [");
            while (i < nk && K(CH(n, i)) == SW_Type) {
                print(p, CH(n, i++), 0);
                if (i < nk && K(CH(n, i)) == SW_Type) puts_(p, ", ");
            }
            /* Swift closes only the list here, not the outer bracket */
            putc_(p, ']');
            continue;
        } else {
            print(p, CH(n, i++), 0);
        }
        putc_(p, ']');
    }
}

/* ---- impl function types ---- */

static void print_impl_function_type(pr_t *p, int fn) {
    int subs = -1, state = 0, sending = 0;
    for (unsigned i = 0; i < NK(fn) && !p->bad; i++) {
        int ch = CH(fn, i);
        int k = K(ch);
        if (k == SW_ImplParameter || k == SW_ImplResult || k == SW_ImplYield || k == SW_ImplErrorResult) {
            int want = k == SW_ImplParameter ? 1 : 2;
            if (state == want) puts_(p, ", ");
            while (state < want) {
                if (state == 0) {
                    if (subs >= 0) {
                        puts_(p, "@substituted ");
                        print(p, CH(subs, 0), 0);
                        putc_(p, ' ');
                    }
                    putc_(p, '(');
                } else {
                    puts_(p, ") -> ");
                    if (sending) puts_(p, "transferring ");
                    putc_(p, '(');
                }
                state++;
            }
            print(p, ch, 0);
        } else if (k == SW_ImplPatternSubstitutions) {
            subs = ch;
        } else if (k == SW_ImplInvocationSubstitutions) {
            /* printed after the type */
        } else if (k == SW_ImplSendingResult) {
            sending = 1;
        } else {
            print(p, ch, 0);
            putc_(p, ' ');
        }
    }
    while (state < 2) {
        if (state == 0) {
            if (subs >= 0) {
                puts_(p, "@substituted ");
                print(p, CH(subs, 0), 0);
                putc_(p, ' ');
            }
            putc_(p, '(');
        } else {
            puts_(p, ") -> ");
            if (sending) puts_(p, "transferring ");
            putc_(p, '(');
        }
        state++;
    }
    putc_(p, ')');
    if (subs >= 0) {
        puts_(p, " for <");
        for (unsigned i = 1; i < NK(subs); i++) print(p, CH(subs, i), 0);
        putc_(p, '>');
    }
}

/* ---- the node printer ---- */

static const char *simple_prefix(int k) {
    switch (k) {
    case SW_TypeMetadata: return "type metadata for ";
    case SW_TypeMetadataAccessFunction: return "type metadata accessor for ";
    case SW_TypeMetadataLazyCache: return "lazy cache variable for type metadata for ";
    case SW_TypeMetadataDemanglingCache: return "demangling cache variable for type metadata for ";
    case SW_FullTypeMetadata: return "full type metadata for ";
    case SW_TypeMetadataInstantiationFunction: return "type metadata instantiation function for ";
    case SW_TypeMetadataInstantiationCache: return "type metadata instantiation cache for ";
    case SW_TypeMetadataSingletonInitializationCache: return "type metadata singleton initialization cache for ";
    case SW_TypeMetadataCompletionFunction: return "type metadata completion function for ";
    case SW_Metaclass: return "metaclass for ";
    case SW_NominalTypeDescriptor: return "nominal type descriptor for ";
    case SW_ClassMetadataBaseOffset: return "class metadata base offset for ";
    case SW_ProtocolDescriptor: return "protocol descriptor for ";
    case SW_GenericTypeMetadataPattern: return "generic type metadata pattern for ";
    case SW_MethodLookupFunction: return "method lookup function for ";
    case SW_PropertyDescriptor: return "property descriptor for ";
    case SW_ExtensionDescriptor: return "extension descriptor ";
    case SW_ProtocolConformanceDescriptor: return "protocol conformance descriptor for ";
    case SW_ReflectionMetadataAssocTypeDescriptor: return "reflection metadata associated type descriptor ";
    case SW_ReflectionMetadataFieldDescriptor: return "reflection metadata field descriptor ";
    case SW_ReflectionMetadataBuiltinDescriptor: return "reflection metadata builtin descriptor ";
    case SW_ReflectionMetadataSuperclassDescriptor: return "reflection metadata superclass descriptor ";
    case SW_ProtocolSelfConformanceDescriptor: return "protocol self-conformance descriptor for ";
    case SW_OpaqueTypeDescriptor: return "opaque type descriptor for ";
    case SW_ObjCMetadataUpdateFunction: return "ObjC metadata update function for ";
    case SW_ObjCResilientClassStub: return "ObjC resilient class stub for ";
    case SW_FullObjCResilientClassStub: return "full ObjC resilient class stub for ";
    case SW_MetadataInstantiationCache: return "metadata instantiation cache for ";
    case SW_CanonicalSpecializedGenericMetaclass: return "specialized generic metaclass for ";
    case SW_NoncanonicalSpecializedGenericTypeMetadata: return "noncanonical specialized generic type metadata for ";
    case SW_CanonicalSpecializedGenericTypeMetadataAccessFunction: return "canonical specialized generic type metadata accessor for ";
    case SW_ValueWitnessTable: return "value witness table for ";
    case SW_ProtocolWitnessTable: return "protocol witness table for ";
    case SW_ProtocolWitnessTablePattern: return "protocol witness table pattern for ";
    case SW_GenericProtocolWitnessTable: return "generic protocol witness table for ";
    case SW_GenericProtocolWitnessTableInstantiationFunction: return "instantiation function for generic protocol witness table for ";
    case SW_ResilientProtocolWitnessTable: return "resilient protocol witness table for ";
    case SW_ProtocolWitnessTableAccessor: return "protocol witness table accessor for ";
    case SW_ProtocolSelfConformanceWitnessTable: return "protocol self-conformance witness table for ";
    case SW_EnumCase: return "enum case for ";
    case SW_OutlinedCopy: return "outlined copy of ";
    case SW_OutlinedConsume: return "outlined consume of ";
    case SW_OutlinedRetain: return "outlined retain of ";
    case SW_OutlinedRelease: return "outlined release of ";
    case SW_OutlinedInitializeWithTake: return "outlined initializeWithTake of ";
    case SW_OutlinedInitializeWithCopy: return "outlined initializeWithCopy of ";
    case SW_OutlinedAssignWithTake: return "outlined assignWithTake of ";
    case SW_OutlinedAssignWithCopy: return "outlined assignWithCopy of ";
    case SW_OutlinedDestroy: return "outlined destroy of ";
    case SW_OutlinedInitializeWithTakeNoValueWitness: return "outlined init with take of ";
    case SW_OutlinedInitializeWithCopyNoValueWitness: return "outlined init with copy of ";
    case SW_OutlinedAssignWithTakeNoValueWitness: return "outlined assign with take of ";
    case SW_OutlinedAssignWithCopyNoValueWitness: return "outlined assign with copy of ";
    case SW_OutlinedDestroyNoValueWitness: return "outlined destroy of ";
    case SW_CurryThunk: return "curry thunk of ";
    case SW_DispatchThunk: return "dispatch thunk of ";
    case SW_MethodDescriptor: return "method descriptor for ";
    case SW_ObjCAttribute: return "@objc ";
    case SW_NonObjCAttribute: return "@nonobjc ";
    case SW_DynamicAttribute: return "dynamic ";
    case SW_DirectMethodReferenceAttribute: return "super ";
    case SW_VTableAttribute: return "override ";
    case SW_DistributedThunk: return "distributed thunk ";
    case SW_DistributedAccessor: return "distributed accessor for ";
    case SW_DynamicallyReplaceableFunctionVar: return "dynamically replaceable variable for ";
    case SW_DynamicallyReplaceableFunctionKey: return "dynamically replaceable key for ";
    case SW_DynamicallyReplaceableFunctionImpl: return "dynamically replaceable thunk for ";
    case SW_AsyncFunctionPointer: return "async function pointer to ";
    case SW_CoroutineContinuationPrototype: return "coroutine continuation prototype for ";
    case SW_ProtocolSelfConformanceWitness: return "protocol self-conformance witness for ";
    case SW_BackDeploymentThunk: return "back deployment thunk for ";
    case SW_BackDeploymentFallback: return "back deployment fallback for ";
    case SW_HasSymbolQuery: return "#_hasSymbol query for ";
    case SW_AccessibleFunctionRecord: return "accessible function runtime record for ";
    case SW_ProtocolRequirementsBaseDescriptor: return "protocol requirements base descriptor for ";
    case SW_ProtocolDescriptorRecord: return "protocol descriptor runtime record for ";
    case SW_ProtocolConformanceDescriptorRecord: return "protocol conformance descriptor runtime record for ";
    case SW_NominalTypeDescriptorRecord: return "nominal type descriptor runtime record for ";
    case SW_OpaqueTypeDescriptorRecord: return "opaque type descriptor runtime record for ";
    case SW_InOut: return "inout ";
    case SW_Shared: return "__shared ";
    case SW_Owned: return "__owned ";
    case SW_Isolated: return "isolated ";
    case SW_Sending: return "transferring ";
    case SW_NoDerivative: return "@noDerivative ";
    case SW_CompileTimeConst: return "_const ";
    case SW_Weak: return "weak ";
    case SW_Unowned: return "unowned ";
    case SW_Unmanaged: return "unowned(unsafe) ";
    case SW_Static: return "static ";
    default: return NULL;
    }
}

static const char *accessor_name(int k) {
    switch (k) {
    case SW_Getter: return "getter";
    case SW_Setter: return "setter";
    case SW_GlobalGetter: return "getter";
    case SW_MaterializeForSet: return "materializeForSet";
    case SW_WillSet: return "willset";
    case SW_DidSet: return "didset";
    case SW_ReadAccessor: return "read";
    case SW_ModifyAccessor: return "modify";
    case SW_InitAccessor: return "init";
    case SW_Read2Accessor: return "read2";
    case SW_Modify2Accessor: return "modify2";
    case SW_OwningMutableAddressor: return "owningMutableAddressor";
    case SW_NativeOwningMutableAddressor: return "nativeOwningMutableAddressor";
    case SW_NativePinningMutableAddressor: return "nativePinningMutableAddressor";
    case SW_UnsafeMutableAddressor: return "unsafeMutableAddressor";
    case SW_OwningAddressor: return "owningAddressor";
    case SW_NativeOwningAddressor: return "nativeOwningAddressor";
    case SW_NativePinningAddressor: return "nativePinningAddressor";
    case SW_UnsafeAddressor: return "unsafeAddressor";
    default: return NULL;
    }
}

static int is_class_type(pr_t *p, int n) { return K(n) == SW_Class; }

static int print_node(pr_t *p, int n, int as_prefix) {
    int k = K(n);
    const char *pre = simple_prefix(k);
    if (pre) {
        if (k == SW_MergedFunction && p->simplified) return -1;
        puts_(p, pre);
        print_children(p, n, NULL);
        return -1;
    }
    const char *acc = accessor_name(k);
    if (acc) return print_storage(p, CH(n, 0), as_prefix, acc);
    switch (k) {
    case SW_Global: print_children(p, n, NULL); return -1;
    case SW_Suffix:
        if (p->simplified) return -1;
        puts_(p, " with unmangled suffix \"");
        put(p, TXT(n));
        putc_(p, '"');
        return -1;
    case SW_Type: return print(p, CH(n, 0), as_prefix);
    case SW_TypeMangling: print_children(p, n, NULL); return -1;
    case SW_Module: if (!p->simplified) put(p, TXT(n)); return -1;
    case SW_Identifier: case SW_BuiltinTypeName: put(p, TXT(n)); return -1;
    case SW_Class: case SW_Structure: case SW_Enum: case SW_Protocol: case SW_TypeAlias:
    case SW_OtherNominalType:
        return print_entity(p, n, as_prefix, TP_NONE, 1, NULL, -1, NULL);
    case SW_Function: case SW_BoundGenericFunction:
        return print_entity(p, n, as_prefix, TP_FUNC, 1, NULL, -1, NULL);
    case SW_Variable: return print_entity(p, n, as_prefix, TP_COLON, 1, NULL, -1, NULL);
    case SW_Subscript: return print_entity(p, n, as_prefix, TP_FUNC, 0, NULL, -1, "subscript");
    case SW_Macro: return print_entity(p, n, as_prefix, NK(n) == 3 ? TP_COLON : TP_FUNC, 1, NULL, -1, NULL);
    case SW_GenericTypeParamDecl: return print_entity(p, n, as_prefix, TP_NONE, 1, NULL, -1, NULL);
    case SW_Constructor:
        return print_entity(p, n, as_prefix, TP_FUNC, NK(n) > 2, "init", -1, NULL);
    case SW_Allocator:
        return print_entity(p, n, as_prefix, TP_FUNC, 0,
                            is_class_type(p, CH(n, 0)) ? "__allocating_init" : "init", -1, NULL);
    case SW_Destructor: return print_entity(p, n, as_prefix, TP_NONE, 0, "deinit", -1, NULL);
    case SW_Deallocator:
        return print_entity(p, n, as_prefix, TP_NONE, 0,
                            is_class_type(p, CH(n, 0)) ? "__deallocating_deinit" : "deinit", -1, NULL);
    case SW_IsolatedDeallocator:
        return print_entity(p, n, as_prefix, TP_NONE, 0,
                            is_class_type(p, CH(n, 0)) ? "__isolated_deallocating_deinit" : "deinit", -1, NULL);
    case SW_IVarInitializer: return print_entity(p, n, as_prefix, TP_NONE, 0, "__ivar_initializer", -1, NULL);
    case SW_IVarDestroyer: return print_entity(p, n, as_prefix, TP_NONE, 0, "__ivar_destroyer", -1, NULL);
    case SW_ExplicitClosure:
        return print_entity(p, n, as_prefix, TP_FUNC, 0, "closure #", (long)IDX(CH(n, 1)) + 1, NULL);
    case SW_ImplicitClosure:
        return print_entity(p, n, as_prefix, TP_FUNC, 0, "implicit closure #", (long)IDX(CH(n, 1)) + 1, NULL);
    case SW_DefaultArgumentInitializer:
        return print_entity(p, n, as_prefix, TP_NONE, 0, "default argument ", (long)IDX(CH(n, 1)), NULL);
    case SW_Initializer:
        return print_entity(p, n, as_prefix, TP_NONE, 0, "variable initialization expression", -1, NULL);
    case SW_PropertyWrapperBackingInitializer:
        return print_entity(p, n, as_prefix, TP_NONE, 0, "property wrapper backing initializer", -1, NULL);
    case SW_PropertyWrapperInitFromProjectedValue:
        return print_entity(p, n, as_prefix, TP_NONE, 0, "property wrapper init from projected value", -1, NULL);
    case SW_Extension:
        if (!p->simplified) {
            puts_(p, "(extension in ");
            print(p, CH(n, 0), 1);
            puts_(p, "):");
        }
        print(p, CH(n, 1), 0);
        if (NK(n) == 3) print(p, CH(n, 2), 0);
        return -1;
    case SW_LocalDeclName:
        print(p, CH(n, 1), 0);
        puts_(p, " #");
        putu(p, IDX(CH(n, 0)) + 1);
        return -1;
    case SW_PrivateDeclName:
        if (NK(n) != 2) {
            if (!p->simplified) {
                puts_(p, "(in ");
                put(p, TXT(CH(n, 0)));
                putc_(p, ')');
            }
            return -1;
        }
        if (!p->simplified) {
            putc_(p, '(');
            print(p, CH(n, 1), 0);
            puts_(p, " in ");
            put(p, TXT(CH(n, 0)));
            putc_(p, ')');
        } else {
            print(p, CH(n, 1), 0);
        }
        return -1;
    case SW_RelatedEntityDeclName:
        puts_(p, "related decl '");
        put(p, TXT(CH(n, 0)));
        puts_(p, "' for ");
        print(p, CH(n, 1), 0);
        return -1;
    case SW_InfixOperator: put(p, TXT(n)); puts_(p, " infix"); return -1;
    case SW_PrefixOperator: put(p, TXT(n)); puts_(p, " prefix"); return -1;
    case SW_PostfixOperator: put(p, TXT(n)); puts_(p, " postfix"); return -1;
    case SW_LabelList: case SW_EmptyList: case SW_FirstElementMarker: return -1;
    case SW_VariadicMarker: puts_(p, "..."); return -1;
    case SW_Tuple:
        putc_(p, '(');
        print_children(p, n, ", ");
        putc_(p, ')');
        return -1;
    case SW_TupleElement: {
        int l = child_of_kind(p, n, SW_TupleElementName);
        if (l >= 0) put(p, TXT(l)), puts_(p, ": ");
        print(p, child_of_kind(p, n, SW_Type), 0);
        if (child_of_kind(p, n, SW_VariadicMarker) >= 0) puts_(p, "...");
        return -1;
    }
    case SW_TupleElementName: put(p, TXT(n)); puts_(p, ": "); return -1;
    case SW_FunctionType: case SW_NoEscapeFunctionType: case SW_AutoClosureType:
    case SW_EscapingAutoClosureType: case SW_ThinFunctionType: case SW_UncurriedFunctionType:
    case SW_CFunctionPointer: case SW_ObjCBlock: case SW_EscapingObjCBlock:
        print_function_type(p, -1, n);
        return -1;
    case SW_ArgumentTuple: print_function_params(p, -1, n, 1); return -1;
    case SW_ReturnType: puts_(p, " -> "); print_children(p, n, NULL); return -1;
    case SW_ThrowsAnnotation: puts_(p, " throws"); return -1;
    case SW_TypedThrowsAnnotation:
        puts_(p, " throws(");
        print(p, CH(n, 0), 0);
        putc_(p, ')');
        return -1;
    case SW_Metatype: {
        unsigned i = 0;
        if (NK(n) == 2) {
            print(p, CH(n, 0), 0);
            putc_(p, ' ');
            i = 1;
        }
        int t = CH(CH(n, i), 0);
        print_with_parens(p, t);
        puts_(p, is_existential(p, t) ? ".Protocol" : ".Type");
        return -1;
    }
    case SW_ExistentialMetatype: {
        unsigned i = 0;
        if (NK(n) == 2) {
            print(p, CH(n, 0), 0);
            putc_(p, ' ');
            i = 1;
        }
        print(p, CH(n, i), 0);
        puts_(p, ".Type");
        return -1;
    }
    case SW_MetatypeRepresentation: put(p, TXT(n)); return -1;
    case SW_DynamicSelf: puts_(p, "Self"); return -1;
    case SW_ErrorType: puts_(p, "<ERROR TYPE>"); return -1;
    case SW_SILBoxType: puts_(p, "@box "); print(p, CH(n, 0), 0); return -1;
    case SW_ProtocolList: {
        int tl = CH(n, 0);
        if (NK(tl) == 0) puts_(p, "Any");
        else print_children(p, tl, " & ");
        return -1;
    }
    case SW_ProtocolListWithClass:
        print(p, CH(n, 1), 0);
        puts_(p, " & ");
        print_children(p, CH(CH(n, 0), 0), " & ");
        return -1;
    case SW_ProtocolListWithAnyObject: {
        int tl = CH(CH(n, 0), 0);
        if (NK(tl) > 0) {
            print_children(p, tl, " & ");
            puts_(p, " & ");
        }
        puts_(p, "AnyObject");
        return -1;
    }
    case SW_ConstrainedExistential:
        puts_(p, "any ");
        print(p, CH(n, 0), 0);
        putc_(p, '<');
        print_children(p, CH(n, 1), ", ");
        putc_(p, '>');
        return -1;
    case SW_ConstrainedExistentialSelf: puts_(p, "Self"); return -1;
    case SW_BoundGenericClass: case SW_BoundGenericStructure: case SW_BoundGenericEnum:
    case SW_BoundGenericProtocol: case SW_BoundGenericTypeAlias:
    case SW_BoundGenericOtherNominalType:
        print_bound_generic(p, n);
        return -1;
    case SW_TypeList: print_children(p, n, NULL); return -1;
    case SW_AssocTypePath: print_children(p, n, "."); return -1;
    case SW_DependentGenericParamType: param_name(p, IDX(CH(n, 0)), IDX(CH(n, 1))); return -1;
    case SW_DependentGenericType: {
        print(p, CH(n, 0), 0);
        int dep = CH(n, 1);
        if (need_space_before_type(p, dep)) putc_(p, ' ');
        print(p, dep, 0);
        return -1;
    }
    case SW_DependentGenericSignature: print_generic_signature(p, n); return -1;
    case SW_DependentGenericConformanceRequirement:
        print(p, CH(n, 0), 0);
        puts_(p, ": ");
        print(p, CH(n, 1), 0);
        return -1;
    case SW_DependentGenericSameTypeRequirement:
        print(p, CH(n, 0), 0);
        puts_(p, " == ");
        print(p, CH(n, 1), 0);
        return -1;
    case SW_DependentGenericLayoutRequirement: {
        print(p, CH(n, 0), 0);
        puts_(p, ": ");
        int l = CH(n, 1);
        char ch = p->c->nodes[l].tlen ? p->c->nodes[l].text[0] : 0;
        const char *name;
        switch (ch) {
        case 'U': name = "_UnknownLayout"; break;
        case 'R': name = "_RefCountedObject"; break;
        case 'N': name = "_NativeRefCountedObject"; break;
        case 'C': name = "AnyObject"; break;
        case 'D': name = "_NativeClass"; break;
        case 'T': case 'E': case 'e': name = "_Trivial"; break;
        case 'M': case 'm': name = "_TrivialAtMost"; break;
        case 'S': name = "_TrivialStride"; break;
        default: p->bad = 1; return -1;
        }
        puts_(p, name);
        if (NK(n) > 2) {
            putc_(p, '(');
            print(p, CH(n, 2), 0);
            if (NK(n) > 3) {
                puts_(p, ", ");
                print(p, CH(n, 3), 0);
            }
            putc_(p, ')');
        }
        return -1;
    }
    case SW_DependentMemberType:
        print(p, CH(n, 0), 0);
        putc_(p, '.');
        print(p, CH(n, 1), 0);
        return -1;
    case SW_DependentAssociatedTypeRef:
        if (NK(n) > 1) {
            print(p, CH(n, 1), 0);
            putc_(p, '.');
        }
        print(p, CH(n, 0), 0);
        return -1;
    case SW_AssociatedTypeRef:
        print(p, CH(n, 0), 0);
        putc_(p, '.');
        print(p, CH(n, 1), 0);
        return -1;
    case SW_Number: case SW_Index: putu(p, IDX(n)); return -1;
    case SW_ProtocolConformance:
        print(p, CH(n, 0), 0);
        if (!p->simplified) {
            puts_(p, " : ");
            print(p, CH(n, 1), 0);
            puts_(p, " in ");
            print(p, CH(n, 2), 0);
        }
        return -1;
    case SW_FieldOffset:
        print(p, CH(n, 0), 0);
        puts_(p, "field offset for ");
        print(p, CH(n, 1), 0);
        return -1;
    case SW_Directness: puts_(p, IDX(n) ? "indirect " : "direct "); return -1;
    case SW_LazyProtocolWitnessTableAccessor: case SW_LazyProtocolWitnessTableCacheVariable:
        puts_(p, k == SW_LazyProtocolWitnessTableAccessor ? "lazy protocol witness table accessor for type "
                                                          : "lazy protocol witness table cache variable for type ");
        print(p, CH(n, 0), 0);
        puts_(p, " and conformance ");
        print(p, CH(n, 1), 0);
        return -1;
    case SW_AssociatedTypeMetadataAccessor:
        puts_(p, "associated type metadata accessor for ");
        print(p, CH(n, 1), 0);
        puts_(p, " in ");
        print(p, CH(n, 0), 0);
        return -1;
    case SW_AssociatedTypeWitnessTableAccessor:
        puts_(p, "associated type witness table accessor for ");
        print(p, CH(n, 1), 0);
        puts_(p, " : ");
        print(p, CH(n, 2), 0);
        puts_(p, " in ");
        print(p, CH(n, 0), 0);
        return -1;
    case SW_BaseWitnessTableAccessor:
        puts_(p, "base witness table accessor for ");
        print(p, CH(n, 1), 0);
        puts_(p, " in ");
        print(p, CH(n, 0), 0);
        return -1;
    case SW_PartialApplyForwarder: case SW_PartialApplyObjCForwarder:
        if (p->simplified) puts_(p, "partial apply");
        else puts_(p, k == SW_PartialApplyForwarder ? "partial apply forwarder" : "partial apply ObjC forwarder");
        if (NK(n)) {
            puts_(p, " for ");
            print_children(p, n, NULL);
        }
        return -1;
    case SW_MergedFunction: if (!p->simplified) puts_(p, "merged "); return -1;
    case SW_AsyncAwaitResumePartialFunction: case SW_AsyncSuspendResumePartialFunction:
        if (!p->simplified) {
            putc_(p, '(');
            print(p, CH(n, 0), 0);
            putc_(p, ')');
            puts_(p, k == SW_AsyncAwaitResumePartialFunction ? " await resume partial function for "
                                                             : " suspend resume partial function for ");
        }
        return -1;
    case SW_VTableThunk:
        puts_(p, "vtable thunk for ");
        print(p, CH(n, 1), 0);
        puts_(p, " dispatching to ");
        print(p, CH(n, 0), 0);
        return -1;
    case SW_ProtocolWitness:
        puts_(p, "protocol witness for ");
        print(p, CH(n, 1), 0);
        puts_(p, " in conformance ");
        print(p, CH(n, 0), 0);
        return -1;
    case SW_ReabstractionThunk: case SW_ReabstractionThunkHelper: {
        if (p->simplified) {
            puts_(p, "thunk for ");
            print(p, CH(n, NK(n) - 1), 0);
            return -1;
        }
        puts_(p, "reabstraction thunk ");
        if (k == SW_ReabstractionThunkHelper) puts_(p, "helper ");
        unsigned i = 0;
        if (NK(n) == 3) {
            print(p, CH(n, 0), 0);
            putc_(p, ' ');
            i = 1;
        }
        puts_(p, "from ");
        print(p, CH(n, i + 1), 0);
        puts_(p, " to ");
        print(p, CH(n, i), 0);
        return -1;
    }
    case SW_ReabstractionThunkHelperWithSelf: {
        puts_(p, "reabstraction thunk ");
        unsigned i = 0;
        if (NK(n) == 4) {
            print(p, CH(n, 0), 0);
            putc_(p, ' ');
            i = 1;
        }
        puts_(p, "from ");
        print(p, CH(n, i + 2), 0);
        puts_(p, " to ");
        print(p, CH(n, i + 1), 0);
        puts_(p, " self ");
        print(p, CH(n, i), 0);
        return -1;
    }
    case SW_GenericSpecialization: print_spec_prefix(p, n, "generic specialization"); return -1;
    case SW_GenericSpecializationPrespecialized:
        print_spec_prefix(p, n, "generic pre-specialization");
        return -1;
    case SW_GenericSpecializationNotReAbstracted:
        print_spec_prefix(p, n, "generic not re-abstracted specialization");
        return -1;
    case SW_GenericSpecializationInResilienceDomain:
        print_spec_prefix(p, n, "generic specialization");
        return -1;
    case SW_InlinedGenericFunction: print_spec_prefix(p, n, "inlined generic function"); return -1;
    case SW_GenericPartialSpecialization: print_spec_prefix(p, n, "generic partial specialization"); return -1;
    case SW_GenericPartialSpecializationNotReAbstracted:
        print_spec_prefix(p, n, "generic not-reabstracted partial specialization");
        return -1;
    case SW_FunctionSignatureSpecialization:
        print_spec_prefix(p, n, "function signature specialization");
        return -1;
    case SW_GenericSpecializationParam:
        print(p, CH(n, 0), 0);
        for (unsigned i = 1; i < NK(n); i++) {
            puts_(p, i == 1 ? " with " : " and ");
            print(p, CH(n, i), 0);
        }
        return -1;
    case SW_OutlinedVariable: case SW_OutlinedReadOnlyObject:
        puts_(p, k == SW_OutlinedVariable ? "outlined variable #" : "outlined read-only object #");
        putu(p, IDX(n));
        puts_(p, " of ");
        return -1;
    case SW_OutlinedBridgedMethod:
        puts_(p, "outlined bridged method (");
        put(p, TXT(n));
        puts_(p, ") of ");
        return -1;
    case SW_AssociatedConformanceDescriptor: case SW_DefaultAssociatedConformanceAccessor:
        puts_(p, k == SW_AssociatedConformanceDescriptor ? "associated conformance descriptor for "
                                                         : "default associated conformance accessor for ");
        print(p, CH(n, 0), 0);
        putc_(p, '.');
        print(p, CH(n, 1), 0);
        puts_(p, ": ");
        print(p, CH(n, 2), 0);
        return -1;
    case SW_BaseConformanceDescriptor:
        puts_(p, "base conformance descriptor for ");
        print(p, CH(n, 0), 0);
        puts_(p, ": ");
        print(p, CH(n, 1), 0);
        return -1;
    case SW_OpaqueReturnTypeOf:
        puts_(p, "<<opaque return type of ");
        print_children(p, n, NULL);
        puts_(p, ">>");
        return -1;
    case SW_OpaqueReturnType:
        puts_(p, "some");
        return -1;
    case SW_OpaqueType:
        print(p, CH(n, 0), 0);
        putc_(p, '.');
        print(p, CH(n, 1), 0);
        return -1;
    case SW_ImplFunctionType: print_impl_function_type(p, n); return -1;
    case SW_ImplConvention: case SW_ImplFunctionAttribute: case SW_ImplCoroutineKind:
    case SW_ImplParameterResultDifferentiability:
        put(p, TXT(n));
        return -1;
    case SW_ImplEscaping: puts_(p, "@escaping"); return -1;
    case SW_ImplErasedIsolation: puts_(p, "@isolated(any)"); return -1;
    case SW_ImplFunctionConvention:
        puts_(p, "@convention(");
        print(p, CH(n, 0), 0);
        putc_(p, ')');
        return -1;
    case SW_ImplFunctionConventionName: put(p, TXT(n)); return -1;
    case SW_ImplDifferentiabilityKind:
        switch (IDX(n)) {
        case 'f': puts_(p, "@differentiable(_forward)"); break;
        case 'r': puts_(p, "@differentiable(reverse)"); break;
        case 'l': puts_(p, "@differentiable(_linear)"); break;
        default: puts_(p, "@differentiable"); break;
        }
        return -1;
    case SW_ImplParameter: case SW_ImplResult: case SW_ImplYield: case SW_ImplErrorResult: {
        if (k == SW_ImplErrorResult) puts_(p, "@error ");
        if (k == SW_ImplYield) puts_(p, "@yields ");
        unsigned nk = NK(n);
        for (unsigned i = 0; i + 1 < nk; i++) {
            int ch = CH(n, i);
            if (K(ch) == SW_ImplParameterSending) puts_(p, "transferring");
            else print(p, ch, 0);
            putc_(p, ' ');
        }
        print(p, CH(n, nk - 1), 0);
        return -1;
    }
    case SW_ImplPatternSubstitutions: case SW_ImplInvocationSubstitutions: return -1;
    case SW_RetroactiveConformance: return -1;
    case SW_SugaredOptional:
        print_with_parens(p, CH(n, 0));
        putc_(p, '?');
        return -1;
    case SW_SugaredArray:
        putc_(p, '[');
        print(p, CH(n, 0), 0);
        putc_(p, ']');
        return -1;
    case SW_SugaredDictionary:
        putc_(p, '[');
        print(p, CH(n, 0), 0);
        puts_(p, " : ");
        print(p, CH(n, 1), 0);
        putc_(p, ']');
        return -1;
    case SW_SugaredParen:
        putc_(p, '(');
        print(p, CH(n, 0), 0);
        putc_(p, ')');
        return -1;
    case SW_KeyPathGetterThunkHelper: case SW_KeyPathSetterThunkHelper: {
        puts_(p, k == SW_KeyPathGetterThunkHelper ? "key path getter for " : "key path setter for ");
        print(p, CH(n, 0), 0);
        puts_(p, " : ");
        for (unsigned i = 1; i < NK(n); i++) {
            if (K(CH(n, i)) == SW_IsSerialized) puts_(p, ", ");
            print(p, CH(n, i), 0);
        }
        return -1;
    }
    case SW_IsSerialized: puts_(p, "serialized"); return -1;
    case SW_SILBoxTypeWithLayout:
        if (NK(n) == 3) {
            print(p, CH(n, 1), 0);
            putc_(p, ' ');
        }
        print(p, CH(n, 0), 0);
        if (NK(n) == 3) {
            puts_(p, " <");
            print_children(p, CH(n, 2), ", ");
            putc_(p, '>');
        }
        return -1;
    case SW_SILBoxLayout:
        putc_(p, '{');
        for (unsigned i = 0; i < NK(n); i++) {
            if (i) putc_(p, ',');
            putc_(p, ' ');
            print(p, CH(n, i), 0);
        }
        puts_(p, " }");
        return -1;
    case SW_SILBoxMutableField: case SW_SILBoxImmutableField:
        puts_(p, k == SW_SILBoxMutableField ? "var " : "let ");
        print(p, CH(n, 0), 0);
        return -1;
    case SW_LifetimeDependence:
        puts_(p, IDX(n) == 's' ? "lifetime dependence: scope " : "lifetime dependence: inherit ");
        print(p, CH(n, 0), 0);
        return -1;
    case SW_AutoDiffFunctionKind:
        switch (IDX(n)) {
        case 'f': puts_(p, "forward-mode derivative"); break;
        case 'r': puts_(p, "reverse-mode derivative"); break;
        case 'd': puts_(p, "differential"); break;
        default: puts_(p, "pullback"); break;
        }
        return -1;
    case SW_IndexSubset: {
        putc_(p, '{');
        int any = 0;
        for (uint32_t i = 0; i < p->c->nodes[n].tlen; i++) {
            if (p->c->nodes[n].text[i] != 'S') continue;
            if (any) puts_(p, ", ");
            putu(p, i);
            any = 1;
        }
        putc_(p, '}');
        return -1;
    }
    case SW_AutoDiffFunction: case SW_AutoDiffDerivativeVTableThunk: {
        unsigned end = 0, nk = NK(n);
        while (end < nk && K(CH(n, end)) != SW_AutoDiffFunctionKind) end++;
        if (end + 2 >= nk) {
            p->bad = 1;
            return -1;
        }
        if (k == SW_AutoDiffDerivativeVTableThunk) puts_(p, "vtable thunk for ");
        print(p, CH(n, end), 0);
        puts_(p, " of ");
        int sig = -1;
        for (unsigned i = 0; i < end; i++) {
            if (i + 1 == end && K(CH(n, i)) == SW_DependentGenericSignature) {
                sig = CH(n, i);
                break;
            }
            print(p, CH(n, i), 0);
        }
        if (p->simplified) return -1;
        puts_(p, " with respect to parameters ");
        print(p, CH(n, end + 1), 0);
        puts_(p, " and results ");
        print(p, CH(n, end + 2), 0);
        if (sig >= 0) {
            puts_(p, " with ");
            print(p, sig, 0);
        }
        return -1;
    }
    case SW_DifferentiabilityWitness: {
        unsigned nk = NK(n);
        if (nk < 3) {
            p->bad = 1;
            return -1;
        }
        unsigned ki = nk - (K(CH(n, nk - 1)) == SW_DependentGenericSignature ? 4 : 3);
        switch (IDX(CH(n, ki))) {
        case 'f': puts_(p, "forward-mode"); break;
        case 'r': puts_(p, "reverse-mode"); break;
        case 'd': puts_(p, "normal"); break;
        default: puts_(p, "linear"); break;
        }
        puts_(p, " differentiability witness for ");
        unsigned i = 0;
        for (; i < nk && K(CH(n, i)) != SW_Index; i++) print(p, CH(n, i), 0);
        i++;
        puts_(p, " with respect to parameters ");
        print(p, CH(n, i++), 0);
        puts_(p, " and results ");
        print(p, CH(n, i++), 0);
        if (i < nk) {
            puts_(p, " with ");
            print(p, CH(n, i), 0);
        }
        return -1;
    }
    case SW_AutoDiffSubsetParametersThunk: {
        unsigned nk = NK(n);
        if (nk < 5) {
            p->bad = 1;
            return -1;
        }
        unsigned cur = nk - 1;
        int to = CH(n, cur--), res = CH(n, cur--), par = CH(n, cur--), kind = CH(n, cur--);
        puts_(p, "autodiff subset parameters thunk for ");
        print(p, kind, 0);
        puts_(p, " from ");
        if (cur == 0) {
            print(p, CH(n, 0), 0);
        } else {
            for (unsigned i = 0; i < cur; i++) print(p, CH(n, i), 0);
        }
        puts_(p, " with respect to parameters ");
        print(p, par, 0);
        puts_(p, " and results ");
        print(p, res, 0);
        puts_(p, " to parameters ");
        print(p, to, 0);
        if (cur > 0) {
            puts_(p, " of type ");
            print(p, CH(n, cur), 0);
        }
        return -1;
    }
    case SW_AutoDiffSelfReorderingReabstractionThunk: {
        puts_(p, "autodiff self-reordering reabstraction thunk ");
        int from = CH(n, 0), to = CH(n, 1);
        if (p->simplified) {
            puts_(p, "for ");
            print(p, from, 0);
            return -1;
        }
        unsigned i = 2;
        int sig = -1;
        if (K(CH(n, i)) == SW_DependentGenericSignature) sig = CH(n, i++);
        puts_(p, "for ");
        print(p, CH(n, i), 0);
        if (sig >= 0) {
            print(p, sig, 0);
            putc_(p, ' ');
        }
        puts_(p, " from ");
        print(p, from, 0);
        puts_(p, " to ");
        print(p, to, 0);
        return -1;
    }
    case SW_ValueWitness:
        print(p, CH(n, 0), 0);
        puts_(p, p->simplified ? " for " : " value witness for ");
        print(p, CH(n, 1), 0);
        return -1;
    case SW_FunctionSignatureSpecializationParam: print_fsig_param(p, n); return -1;
    case SW_FunctionSignatureSpecializationParamKind: put(p, TXT(n)); return -1;
    case SW_FunctionSignatureSpecializationParamPayload: print_payload(p, n); return -1;
    case SW_AssociatedTypeDescriptor:
        puts_(p, "associated type descriptor for ");
        print(p, CH(n, 0), 0);
        return -1;
    case SW_FreestandingMacroExpansion:
        return print_entity(p, n, as_prefix, TP_NONE, 1, "freestanding macro expansion #",
                            (long)IDX(CH(n, 2)) + 1, NULL);
    case SW_MacroExpansionUniqueName:
        return print_entity(p, n, as_prefix, TP_NONE, 1, "unique name #", (long)IDX(CH(n, 2)) + 1, NULL);
    case SW_PeerAttachedMacroExpansion: {
        char buf[160];
        const char *pref = "peer macro @";
        size_t l = strlen(pref);
        memcpy(buf, pref, l);
        int m = CH(n, 2);
        size_t ml = p->c->nodes[m].tlen;
        if (ml > 100) ml = 100;
        memcpy(buf + l, p->c->nodes[m].text, ml);
        l += ml;
        memcpy(buf + l, " expansion #", 13);
        return print_entity(p, n, as_prefix, TP_NONE, 1, buf, (long)IDX(CH(n, 3)) + 1, NULL);
    }
    default:
        p->bad = 1;
        return -1;
    }
}

static int print(pr_t *p, int n, int as_prefix) {
    if (n < 0 || p->bad) {
        p->bad = 1;
        return -1;
    }
    if (++p->steps > PR_MAX_STEPS || p->depth >= SW_MAX_DEPTH) {
        p->bad = 1;
        return -1;
    }
    p->depth++;
    int r = print_node(p, n, as_prefix);
    p->depth--;
    return r;
}

long sw_print(const sw_ctx *c, int root, char *out, size_t cap, const sw_opts *o) {
    pr_t p;
    memset(&p, 0, sizeof p);
    p.c = c;
    p.out = out;
    p.cap = cap;
    p.simplified = o->simplified;
    p.nested = o->nested;
    print(&p, root, 0);
    if (p.bad) return -1;
    return (long)p.len;
}
