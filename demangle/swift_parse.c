/* SPDX-License-Identifier: MIT */
/* Swift's current mangling (Swift 4+: $s, $S, $e, _T0) parsed into a bounded node tree. */
#include "demangle/swift_int.h"

#include <string.h>

/* ---- the tree ---- */

int sw_mk(sw_ctx *c, int kind) {
    if (c->nn >= SW_MAX_NODES) {
        c->fail = 1;
        return -1;
    }
    sw_node *n = &c->nodes[c->nn];
    memset(n, 0, sizeof *n);
    n->kind = (uint16_t)kind;
    n->head = n->tail = -1;
    return c->nn++;
}

int sw_mk_text(sw_ctx *c, int kind, const char *t, size_t len) {
    int n = sw_mk(c, kind);
    if (n >= 0) c->nodes[n].text = t, c->nodes[n].tlen = (uint32_t)len;
    return n;
}

int sw_mk_index(sw_ctx *c, int kind, uint64_t idx) {
    int n = sw_mk(c, kind);
    if (n >= 0) c->nodes[n].index = idx;
    return n;
}

int sw_add(sw_ctx *c, int parent, int child) {
    if (parent < 0 || child < 0) return -1;
    if (c->nc >= SW_MAX_CELLS || c->nodes[parent].nkids == UINT16_MAX) {
        c->fail = 1;
        return -1;
    }
    int cell = c->nc++;
    c->cells[cell].node = child;
    c->cells[cell].next = -1;
    sw_node *p = &c->nodes[parent];
    if (p->tail >= 0) c->cells[p->tail].next = cell;
    else p->head = cell;
    p->tail = cell;
    p->nkids++;
    return parent;
}

/* Adds child when there is one (optional children). */
static void add_opt(sw_ctx *c, int parent, int child) {
    if (parent >= 0 && child >= 0) sw_add(c, parent, child);
}

int sw_with(sw_ctx *c, int kind, int a) {
    if (a < 0) return -1;
    return sw_add(c, sw_mk(c, kind), a);
}

int sw_with2(sw_ctx *c, int kind, int a, int b) {
    if (a < 0 || b < 0) return -1;
    return sw_add(c, sw_add(c, sw_mk(c, kind), a), b);
}

static int with3(sw_ctx *c, int kind, int a, int b, int d) {
    if (d < 0) return -1;
    return sw_add(c, sw_with2(c, kind, a, b), d);
}

int sw_child(const sw_ctx *c, int n, unsigned i) {
    if (n < 0) return -1;
    int cell = c->nodes[n].head;
    while (cell >= 0 && i--) cell = c->cells[cell].next;
    return cell >= 0 ? c->cells[cell].node : -1;
}

int sw_kind_of(const sw_ctx *c, int n) { return n >= 0 ? c->nodes[n].kind : SW_None; }

static unsigned nkids(const sw_ctx *c, int n) { return n >= 0 ? c->nodes[n].nkids : 0; }

/* Reverses the children from position `from` on. */
static void reverse_kids(sw_ctx *c, int n, unsigned from) {
    if (n < 0) return;
    unsigned k = c->nodes[n].nkids;
    if (k - from < 2 || k > 4096) return;
    int tmp[4096];
    int cell = c->nodes[n].head;
    for (unsigned i = 0; i < k; i++, cell = c->cells[cell].next) tmp[i] = cell;
    for (unsigned i = from, j = k - 1; i < j; i++, j--) {
        int t = c->cells[tmp[i]].node;
        c->cells[tmp[i]].node = c->cells[tmp[j]].node;
        c->cells[tmp[j]].node = t;
    }
}

/* Removes child i (the old scheme moves tuple labels into a label list). */
static void remove_kid(sw_ctx *c, int n, unsigned i) {
    int prev = -1, cell = c->nodes[n].head;
    while (cell >= 0 && i--) prev = cell, cell = c->cells[cell].next;
    if (cell < 0) return;
    if (prev >= 0) c->cells[prev].next = c->cells[cell].next;
    else c->nodes[n].head = c->cells[cell].next;
    if (c->nodes[n].tail == cell) c->nodes[n].tail = prev;
    c->nodes[n].nkids--;
}

const char *sw_pool_put(sw_ctx *c, const char *t, size_t n) {
    if (n > (size_t)(SW_POOL - c->npool)) {
        c->fail = 1;
        return NULL;
    }
    char *d = c->pool + c->npool;
    memcpy(d, t, n);
    c->npool += (int)n;
    return d;
}


/* ---- input ---- */

static int peek(sw_ctx *c) { return c->pos < c->n ? (unsigned char)c->s[c->pos] : 0; }
static int next(sw_ctx *c) { return c->pos < c->n ? (unsigned char)c->s[c->pos++] : 0; }
static int next_if(sw_ctx *c, int ch) {
    if (peek(c) != ch || ch == 0) return 0;
    c->pos++;
    return 1;
}
static void push_back(sw_ctx *c) {
    if (c->pos) c->pos--;
}
static int is_digit(int ch) { return ch >= '0' && ch <= '9'; }
static int is_lower(int ch) { return ch >= 'a' && ch <= 'z'; }
static int is_upper(int ch) { return ch >= 'A' && ch <= 'Z'; }

/* A natural number; -1 when there is none or it is absurdly large. */
static long natural(sw_ctx *c) {
    if (!is_digit(peek(c))) return -1;
    long v = 0;
    while (is_digit(peek(c))) {
        v = v * 10 + (next(c) - '0');
        if (v > 1000000000L) return -1;
    }
    return v;
}

/* index ::= '_' | NATURAL '_'  (0, N+1) */
static long dindex(sw_ctx *c) {
    if (next_if(c, '_')) return 0;
    if (is_digit(peek(c))) {
        long v = natural(c);
        if (v >= 0 && next_if(c, '_')) return v + 1;
    }
    return -1;
}

static int index_node(sw_ctx *c) {
    long i = dindex(c);
    return i < 0 ? -1 : sw_mk_index(c, SW_Number, (uint64_t)i);
}

/* ---- the stack ---- */

static void push(sw_ctx *c, int n) {
    if (n < 0) return;
    if (c->sp >= SW_MAX_STACK) {
        c->fail = 1;
        return;
    }
    c->stack[c->sp++] = n;
}

static int pop(sw_ctx *c) { return c->sp ? c->stack[--c->sp] : -1; }

static int top_kind(sw_ctx *c) { return c->sp ? c->nodes[c->stack[c->sp - 1]].kind : SW_None; }

static int pop_kind(sw_ctx *c, int kind) { return top_kind(c) == kind ? pop(c) : -1; }

static int pop_if(sw_ctx *c, int (*pred)(int)) { return c->sp && pred(top_kind(c)) ? pop(c) : -1; }

static void add_subst(sw_ctx *c, int n) {
    if (n < 0) return;
    if (c->nsubst >= SW_MAX_SUBST) {
        c->fail = 1;
        return;
    }
    c->subst[c->nsubst++] = n;
}

static int type_of(sw_ctx *c, int n) { return sw_with(c, SW_Type, n); }

static int pop_type_child(sw_ctx *c) { return sw_child(c, pop_kind(c, SW_Type), 0); }

/* ---- predicates ---- */

static int is_decl_name(int k) {
    switch (k) {
    case SW_Identifier: case SW_LocalDeclName: case SW_PrivateDeclName:
    case SW_RelatedEntityDeclName: case SW_PrefixOperator: case SW_PostfixOperator:
    case SW_InfixOperator: case SW_TypeSymbolicReference:
        return 1;
    default:
        return 0;
    }
}

static int is_any_generic(int k) {
    switch (k) {
    case SW_Structure: case SW_Class: case SW_Enum: case SW_Protocol: case SW_OtherNominalType:
    case SW_TypeAlias: case SW_TypeSymbolicReference:
        return 1;
    default:
        return 0;
    }
}

static int is_context(int k) {
    switch (k) {
    case SW_Allocator: case SW_AnonymousDescriptor: case SW_Class: case SW_Constructor:
    case SW_Deallocator: case SW_IsolatedDeallocator: case SW_DefaultArgumentInitializer:
    case SW_Destructor: case SW_DidSet: case SW_Enum: case SW_ExplicitClosure: case SW_Extension:
    case SW_Function: case SW_Getter: case SW_GlobalGetter: case SW_IVarInitializer:
    case SW_IVarDestroyer: case SW_ImplicitClosure: case SW_Initializer: case SW_InitAccessor:
    case SW_MaterializeForSet: case SW_ModifyAccessor: case SW_Modify2Accessor: case SW_Module:
    case SW_NativeOwningAddressor: case SW_NativeOwningMutableAddressor:
    case SW_NativePinningAddressor: case SW_NativePinningMutableAddressor:
    case SW_OtherNominalType: case SW_OwningAddressor: case SW_OwningMutableAddressor:
    case SW_PropertyWrapperBackingInitializer: case SW_PropertyWrapperInitFromProjectedValue:
    case SW_Protocol: case SW_ReadAccessor: case SW_Read2Accessor: case SW_Setter:
    case SW_Static: case SW_Structure: case SW_Subscript: case SW_TypeSymbolicReference:
    case SW_TypeAlias: case SW_UnsafeAddressor: case SW_UnsafeMutableAddressor:
    case SW_Variable: case SW_WillSet: case SW_OpaqueReturnTypeOf: case SW_Macro:
    case SW_FreestandingMacroExpansion: case SW_PeerAttachedMacroExpansion:
    case SW_MemberAttachedMacroExpansion: case SW_AccessorAttachedMacroExpansion:
    case SW_MemberAttributeAttachedMacroExpansion: case SW_ConformanceAttachedMacroExpansion:
    case SW_ExtensionAttachedMacroExpansion: case SW_BodyAttachedMacroExpansion:
    case SW_PreambleAttachedMacroExpansion: case SW_MacroExpansionUniqueName:
    case SW_LocalTypeUnknownContext: case SW_AutoDiffFunction: case SW_AutoDiffDerivativeVTableThunk:
        return 1;
    default:
        return 0;
    }
}

static int is_entity(int k) { return k == SW_Type || is_context(k); }

static int is_requirement(int k) {
    return k == SW_DependentGenericConformanceRequirement ||
           k == SW_DependentGenericSameTypeRequirement || k == SW_DependentGenericLayoutRequirement;
}

static int is_function_attr(int k) {
    switch (k) {
    case SW_FunctionSignatureSpecialization: case SW_GenericSpecialization:
    case SW_GenericSpecializationPrespecialized: case SW_InlinedGenericFunction:
    case SW_GenericSpecializationNotReAbstracted: case SW_GenericPartialSpecialization:
    case SW_GenericPartialSpecializationNotReAbstracted:
    case SW_GenericSpecializationInResilienceDomain: case SW_ObjCAttribute:
    case SW_NonObjCAttribute: case SW_DynamicAttribute: case SW_DirectMethodReferenceAttribute:
    case SW_VTableAttribute: case SW_PartialApplyForwarder: case SW_PartialApplyObjCForwarder:
    case SW_OutlinedVariable: case SW_OutlinedReadOnlyObject: case SW_OutlinedBridgedMethod:
    case SW_MergedFunction: case SW_DistributedThunk: case SW_DistributedAccessor:
    case SW_DynamicallyReplaceableFunctionImpl: case SW_DynamicallyReplaceableFunctionKey:
    case SW_DynamicallyReplaceableFunctionVar: case SW_AsyncFunctionPointer:
    case SW_AsyncAwaitResumePartialFunction: case SW_AsyncSuspendResumePartialFunction:
    case SW_AccessibleFunctionRecord: case SW_BackDeploymentThunk:
    case SW_BackDeploymentFallback: case SW_HasSymbolQuery:
        return 1;
    default:
        return 0;
    }
}

static int is_fn_annotation(int k) {
    switch (k) {
    case SW_ThrowsAnnotation: case SW_TypedThrowsAnnotation: case SW_AsyncAnnotation:
    case SW_ConcurrentFunctionType: case SW_GlobalActorFunctionType:
    case SW_IsolatedAnyFunctionType: case SW_DifferentiableFunctionType:
    case SW_SendingResultFunctionType: case SW_ClangType: case SW_SelfLifetimeDependence:
        return 1;
    default:
        return 0;
    }
}

static int is_protocol_type(const sw_ctx *c, int t) {
    int k = sw_kind_of(c, t);
    if (k == SW_Type) return is_protocol_type(c, sw_child(c, t, 0));
    return k == SW_Protocol || k == SW_TypeSymbolicReference;
}

/* ---- pops ---- */

static int pop_module(sw_ctx *c) {
    int id = pop_kind(c, SW_Identifier);
    if (id >= 0) {
        int m = sw_mk_text(c, SW_Module, c->nodes[id].text, c->nodes[id].tlen);
        return m;
    }
    return pop_kind(c, SW_Module);
}

static int pop_context(sw_ctx *c) {
    int m = pop_module(c);
    if (m >= 0) return m;
    int t = pop_kind(c, SW_Type);
    if (t >= 0) {
        if (nkids(c, t) != 1) return -1;
        int ch = sw_child(c, t, 0);
        return is_context(sw_kind_of(c, ch)) ? ch : -1;
    }
    return pop_if(c, is_context);
}

static int pop_type_any_generic(sw_ctx *c) {
    int ch = pop_type_child(c);
    return is_any_generic(sw_kind_of(c, ch)) ? ch : -1;
}

static int pop_protocol(sw_ctx *c) {
    int t = pop_kind(c, SW_Type);
    if (t >= 0) {
        if (nkids(c, t) < 1 || !is_protocol_type(c, t)) return -1;
        return t;
    }
    int name = pop_if(c, is_decl_name);
    int ctx = pop_context(c);
    return type_of(c, sw_with2(c, SW_Protocol, ctx, name));
}

static int pop_protocol_conformance(sw_ctx *c) {
    int sig = pop_kind(c, SW_DependentGenericSignature);
    int mod = pop_module(c);
    int proto = pop_protocol(c);
    int type = pop_kind(c, SW_Type);
    int ident = -1;
    if (type < 0) {
        ident = pop_kind(c, SW_Identifier);
        type = pop_kind(c, SW_Type);
    }
    if (sig >= 0) type = type_of(c, sw_with2(c, SW_DependentGenericType, sig, type));
    int conf = with3(c, SW_ProtocolConformance, type, proto, mod);
    add_opt(c, conf, ident);
    return conf;
}

static int pop_function_params(sw_ctx *c, int kind) {
    int params;
    if (pop_kind(c, SW_EmptyList) >= 0) params = type_of(c, sw_mk(c, SW_Tuple));
    else params = pop_kind(c, SW_Type);
    if (params < 0) return -1;
    int n = sw_mk(c, kind);
    if (n >= 0 && kind == SW_ArgumentTuple) {
        int p = sw_child(c, params, 0);
        c->nodes[n].index = sw_kind_of(c, p) == SW_Tuple ? nkids(c, p) : 1;
    }
    return sw_add(c, n, params);
}

static int pop_function_type(sw_ctx *c, int kind) {
    int ft = sw_mk(c, kind);
    int ann[12], na = 0;
    while (na < 12 && is_fn_annotation(top_kind(c))) ann[na++] = pop(c);
    /* Canonical order, so that the printer finds them as Swift's does. */
    static const int order[] = {SW_ClangType, SW_SelfLifetimeDependence, SW_SendingResultFunctionType,
                                SW_IsolatedAnyFunctionType, SW_GlobalActorFunctionType,
                                SW_DifferentiableFunctionType, SW_ThrowsAnnotation,
                                SW_TypedThrowsAnnotation, SW_ConcurrentFunctionType,
                                SW_AsyncAnnotation};
    for (unsigned o = 0; o < sizeof order / sizeof order[0]; o++)
        for (int i = 0; i < na; i++)
            if (sw_kind_of(c, ann[i]) == order[o]) add_opt(c, ft, ann[i]);
    ft = sw_add(c, ft, pop_function_params(c, SW_ArgumentTuple));
    ft = sw_add(c, ft, pop_function_params(c, SW_ReturnType));
    return type_of(c, ft);
}

static int fn_args(const sw_ctx *c, int type) {
    int ft = sw_child(c, type, 0);
    if (sw_kind_of(c, ft) == SW_DependentGenericType) ft = sw_child(c, sw_child(c, ft, 1), 0);
    int k = sw_kind_of(c, ft);
    if (k != SW_FunctionType && k != SW_NoEscapeFunctionType) return -1;
    for (unsigned i = 0; i < nkids(c, ft); i++) {
        int ch = sw_child(c, ft, i);
        if (sw_kind_of(c, ch) == SW_ArgumentTuple) return ch;
    }
    return -1;
}

static int pop_function_param_labels(sw_ctx *c, int type) {
    if (!c->old_fn_mangling && pop_kind(c, SW_EmptyList) >= 0) return sw_mk(c, SW_LabelList);
    if (sw_kind_of(c, type) != SW_Type) return -1;
    int args = fn_args(c, type);
    if (args < 0) return -1;
    uint64_t np = c->nodes[args].index;
    if (np == 0) return -1;
    int tuple = sw_child(c, sw_child(c, args, 0), 0);
    if (c->old_fn_mangling && sw_kind_of(c, tuple) != SW_Tuple) return sw_mk(c, SW_LabelList);
    int list = sw_mk(c, SW_LabelList);
    int has = 0;
    for (uint64_t i = 0; i < np && i < 4096; i++) {
        int label = -1;
        if (c->old_fn_mangling) {
            int param = sw_child(c, tuple, (unsigned)i);
            label = -1;
            for (unsigned j = 0; j < nkids(c, param); j++) {
                int e = sw_child(c, param, j);
                if (sw_kind_of(c, e) == SW_TupleElementName) {
                    remove_kid(c, param, j);
                    label = sw_mk_text(c, SW_Identifier, c->nodes[e].text, c->nodes[e].tlen);
                    break;
                }
            }
            if (label < 0) label = sw_mk(c, SW_FirstElementMarker);
        } else {
            label = pop(c);
        }
        int k = sw_kind_of(c, label);
        if (k != SW_Identifier && k != SW_FirstElementMarker) return -1;
        sw_add(c, list, label);
        has |= k != SW_FirstElementMarker;
    }
    if (!has) return sw_mk(c, SW_LabelList);
    if (!c->old_fn_mangling) reverse_kids(c, list, 0);
    return list;
}

static int pop_tuple(sw_ctx *c) {
    int root = sw_mk(c, SW_Tuple);
    if (pop_kind(c, SW_EmptyList) < 0) {
        int first = 0;
        do {
            first = pop_kind(c, SW_FirstElementMarker) >= 0;
            int el = sw_mk(c, SW_TupleElement);
            add_opt(c, el, pop_kind(c, SW_VariadicMarker));
            int id = pop_kind(c, SW_Identifier);
            if (id >= 0)
                add_opt(c, el, sw_mk_text(c, SW_TupleElementName, c->nodes[id].text, c->nodes[id].tlen));
            int ty = pop_kind(c, SW_Type);
            if (ty < 0 || el < 0) return -1;
            sw_add(c, el, ty);
            sw_add(c, root, el);
        } while (!first && !c->fail);
        reverse_kids(c, root, 0);
    }
    return type_of(c, root);
}

static int pop_type_list(sw_ctx *c) {
    int root = sw_mk(c, SW_TypeList);
    if (pop_kind(c, SW_EmptyList) < 0) {
        int first = 0;
        do {
            first = pop_kind(c, SW_FirstElementMarker) >= 0;
            int ty = pop_kind(c, SW_Type);
            if (ty < 0) return -1;
            sw_add(c, root, ty);
        } while (!first && !c->fail);
        reverse_kids(c, root, 0);
    }
    return root;
}

/* ---- identifiers ---- */

static int word_start(int ch) { return !is_digit(ch) && ch != '_' && ch != 0; }
static int word_end(int ch, int prev) {
    return ch == '_' || ch == 0 || (!is_upper(prev) && is_upper(ch));
}

/* Punycode as Swift uses it (digits a-z then A-J; '_' ends the basic code points). */
int sw_punycode_utf8(const char *in, size_t n, char *out, size_t cap, size_t *olen) {
    uint32_t cps[256];
    size_t ncp = 0;
    size_t basic = 0;
    for (size_t i = 0; i < n; i++)
        if (in[i] == '_') basic = i;
    size_t pos = 0;
    if (basic > 0 || (n && in[0] == '_')) {
        for (size_t i = 0; i < basic; i++) {
            if ((unsigned char)in[i] >= 0x80 || ncp >= 256) return 0;
            cps[ncp++] = (unsigned char)in[i];
        }
        pos = basic + 1;
    }
    uint32_t nn = 128, bias = 72, i = 0;
    while (pos < n) {
        uint32_t oldi = i, w = 1;
        for (uint32_t k = 36;; k += 36) {
            if (pos >= n) return 0;
            int ch = (unsigned char)in[pos++];
            uint32_t digit;
            if (ch >= 'a' && ch <= 'z') digit = (uint32_t)(ch - 'a');
            else if (ch >= 'A' && ch <= 'J') digit = (uint32_t)(ch - 'A' + 26);
            else return 0;
            if (digit > (0xffffffffu - i) / w) return 0;
            i += digit * w;
            uint32_t t = k <= bias ? 1 : (k >= bias + 26 ? 26 : k - bias);
            if (digit < t) break;
            if (w > 0xffffffffu / (36 - t)) return 0;
            w *= 36 - t;
        }
        uint32_t delta = (i - oldi) / (oldi == 0 ? 700 : 2);
        delta += delta / (uint32_t)(ncp + 1);
        uint32_t k = 0;
        while (delta > ((36 - 1) * 26) / 2) {
            delta /= 35;
            k += 36;
        }
        bias = k + (36 * delta) / (delta + 38);
        if (i / (ncp + 1) > 0x10ffff - nn) return 0;
        nn += i / (uint32_t)(ncp + 1);
        i %= (uint32_t)(ncp + 1);
        if (nn < 0x80 || ncp >= 256) return 0;
        memmove(cps + i + 1, cps + i, (ncp - i) * sizeof cps[0]);
        cps[i++] = nn;
        ncp++;
    }
    size_t o = 0;
    for (size_t j = 0; j < ncp; j++) {
        uint32_t cp = cps[j];
        if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD;
        if (cp > 0x10ffff) return 0;
        char b[4];
        size_t l;
        if (cp < 0x80) b[0] = (char)cp, l = 1;
        else if (cp < 0x800) b[0] = (char)(0xC0 | cp >> 6), b[1] = (char)(0x80 | (cp & 63)), l = 2;
        else if (cp < 0x10000)
            b[0] = (char)(0xE0 | cp >> 12), b[1] = (char)(0x80 | ((cp >> 6) & 63)),
            b[2] = (char)(0x80 | (cp & 63)), l = 3;
        else
            b[0] = (char)(0xF0 | cp >> 18), b[1] = (char)(0x80 | ((cp >> 12) & 63)),
            b[2] = (char)(0x80 | ((cp >> 6) & 63)), b[3] = (char)(0x80 | (cp & 63)), l = 4;
        if (o + l > cap) return 0;
        memcpy(out + o, b, l);
        o += l;
    }
    *olen = o;
    return 1;
}

static int demangle_identifier(sw_ctx *c) {
    int words = 0, puny = 0;
    if (!is_digit(peek(c))) return -1;
    if (peek(c) == '0') {
        next(c);
        if (peek(c) == '0') next(c), puny = 1;
        else words = 1;
    }
    int plain = !words && !puny;
    char buf[1024];
    size_t len = 0;
    do {
        while (words && (is_lower(peek(c)) || is_upper(peek(c)))) {
            int ch = next(c);
            int wi = is_lower(ch) ? ch - 'a' : ch - 'A';
            if (is_upper(ch)) words = 0;
            if (wi >= c->nwords) return -1;
            if (len + c->wlen[wi] > sizeof buf) return -1;
            memcpy(buf + len, c->words[wi], c->wlen[wi]);
            len += c->wlen[wi];
        }
        if (next_if(c, '0')) break;
        long nch = natural(c);
        if (nch <= 0) return -1;
        if (puny) next_if(c, '_');
        if ((size_t)nch > c->n - c->pos) return -1;
        const char *sl = c->s + c->pos;
        if (puny) {
            size_t ol;
            if (!sw_punycode_utf8(sl, (size_t)nch, buf + len, sizeof buf - len, &ol)) return -1;
            len += ol;
        } else {
            if (len + (size_t)nch > sizeof buf) return -1;
            memcpy(buf + len, sl, (size_t)nch);
            len += (size_t)nch;
            int ws = -1;
            for (long i = 0; i <= nch; i++) {
                int ch = i < nch ? (unsigned char)sl[i] : 0;
                if (ws >= 0 && word_end(ch, (unsigned char)sl[i - 1])) {
                    if (i - ws >= 2 && c->nwords < SW_MAX_WORDS) {
                        c->words[c->nwords] = sl + ws;
                        c->wlen[c->nwords++] = (uint32_t)(i - ws);
                    }
                    ws = -1;
                }
                if (ws < 0 && word_start(ch)) ws = (int)i;
            }
        }
        c->pos += (size_t)nch;
    } while (words);
    if (len == 0) return -1;
    /* A plain identifier is the input itself; only decoded ones need the pool. */
    const char *t = plain ? c->s + c->pos - len : sw_pool_put(c, buf, len);
    if (!t) return -1;
    int id = sw_mk_text(c, SW_Identifier, t, len);
    add_subst(c, id);
    return id;
}

static int demangle_operator_identifier(sw_ctx *c) {
    int id = pop_kind(c, SW_Identifier);
    if (id < 0) return -1;
    static const char table[] = "& @/= >    <*!|+?%-~   ^ .";
    char buf[1024];
    size_t n = c->nodes[id].tlen;
    if (n > sizeof buf) return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)c->nodes[id].text[i];
        if (ch >= 0x80) {
            buf[i] = (char)ch;
            continue;
        }
        if (!is_lower(ch) || table[ch - 'a'] == ' ') return -1;
        buf[i] = table[ch - 'a'];
    }
    const char *t = sw_pool_put(c, buf, n);
    if (!t) return -1;
    switch (next(c)) {
    case 'i': return sw_mk_text(c, SW_InfixOperator, t, n);
    case 'p': return sw_mk_text(c, SW_PrefixOperator, t, n);
    case 'P': return sw_mk_text(c, SW_PostfixOperator, t, n);
    default: return -1;
    }
}

static int demangle_local_identifier(sw_ctx *c) {
    if (next_if(c, 'L')) {
        int disc = pop_kind(c, SW_Identifier);
        int name = pop_if(c, is_decl_name);
        return sw_with2(c, SW_PrivateDeclName, disc, name);
    }
    if (next_if(c, 'l')) return sw_with(c, SW_PrivateDeclName, pop_kind(c, SW_Identifier));
    int p = peek(c);
    if ((p >= 'a' && p <= 'j') || (p >= 'A' && p <= 'J')) {
        next(c);
        int kind = sw_mk_text(c, SW_Identifier, c->s + c->pos - 1, 1);
        int name = pop(c);
        return sw_with2(c, SW_RelatedEntityDeclName, kind, name);
    }
    int disc = index_node(c);
    int name = pop_if(c, is_decl_name);
    return sw_with2(c, SW_LocalDeclName, disc, name);
}

/* ---- types ---- */

static int swift_type(sw_ctx *c, int kind, const char *name) {
    int mod = sw_mk_text(c, SW_Module, "Swift", 5);
    int id = sw_mk_text(c, SW_Identifier, name, strlen(name));
    return type_of(c, sw_with2(c, kind, mod, id));
}

static int standard_subst(sw_ctx *c, int ch, int second) {
    const char *n = NULL;
    int k = SW_Structure;
    if (second) {
        switch (ch) {
        case 'A': n = "Actor", k = SW_Protocol; break;
        case 'C': n = "CheckedContinuation"; break;
        case 'c': n = "UnsafeContinuation"; break;
        case 'E': n = "CancellationError"; break;
        case 'e': n = "UnownedSerialExecutor"; break;
        case 'F': n = "Executor", k = SW_Protocol; break;
        case 'f': n = "SerialExecutor", k = SW_Protocol; break;
        case 'G': n = "TaskGroup"; break;
        case 'g': n = "ThrowingTaskGroup"; break;
        case 'h': n = "TaskExecutor", k = SW_Protocol; break;
        case 'I': n = "AsyncIteratorProtocol", k = SW_Protocol; break;
        case 'i': n = "AsyncSequence", k = SW_Protocol; break;
        case 'J': n = "UnownedJob"; break;
        case 'M': n = "MainActor", k = SW_Class; break;
        case 'P': n = "TaskPriority"; break;
        case 'S': n = "AsyncStream"; break;
        case 's': n = "AsyncThrowingStream"; break;
        case 'T': n = "Task"; break;
        case 't': n = "UnsafeCurrentTask"; break;
        default: return -1;
        }
        return swift_type(c, k, n);
    }
    switch (ch) {
    case 'A': n = "AutoreleasingUnsafeMutablePointer"; break;
    case 'a': n = "Array"; break;
    case 'b': n = "Bool"; break;
    case 'D': n = "Dictionary"; break;
    case 'd': n = "Double"; break;
    case 'f': n = "Float"; break;
    case 'h': n = "Set"; break;
    case 'I': n = "DefaultIndices"; break;
    case 'i': n = "Int"; break;
    case 'J': n = "Character"; break;
    case 'N': n = "ClosedRange"; break;
    case 'n': n = "Range"; break;
    case 'O': n = "ObjectIdentifier"; break;
    case 'P': n = "UnsafePointer"; break;
    case 'p': n = "UnsafeMutablePointer"; break;
    case 'R': n = "UnsafeBufferPointer"; break;
    case 'r': n = "UnsafeMutableBufferPointer"; break;
    case 'S': n = "String"; break;
    case 's': n = "Substring"; break;
    case 'u': n = "UInt"; break;
    case 'V': n = "UnsafeRawPointer"; break;
    case 'v': n = "UnsafeMutableRawPointer"; break;
    case 'W': n = "UnsafeRawBufferPointer"; break;
    case 'w': n = "UnsafeMutableRawBufferPointer"; break;
    case 'q': n = "Optional", k = SW_Enum; break;
    case 'B': n = "BinaryFloatingPoint", k = SW_Protocol; break;
    case 'E': n = "Encodable", k = SW_Protocol; break;
    case 'e': n = "Decodable", k = SW_Protocol; break;
    case 'F': n = "FloatingPoint", k = SW_Protocol; break;
    case 'G': n = "RandomNumberGenerator", k = SW_Protocol; break;
    case 'H': n = "Hashable", k = SW_Protocol; break;
    case 'j': n = "Numeric", k = SW_Protocol; break;
    case 'K': n = "BidirectionalCollection", k = SW_Protocol; break;
    case 'k': n = "RandomAccessCollection", k = SW_Protocol; break;
    case 'L': n = "Comparable", k = SW_Protocol; break;
    case 'l': n = "Collection", k = SW_Protocol; break;
    case 'M': n = "MutableCollection", k = SW_Protocol; break;
    case 'm': n = "RangeReplaceableCollection", k = SW_Protocol; break;
    case 'Q': n = "Equatable", k = SW_Protocol; break;
    case 'T': n = "Sequence", k = SW_Protocol; break;
    case 't': n = "IteratorProtocol", k = SW_Protocol; break;
    case 'U': n = "UnsignedInteger", k = SW_Protocol; break;
    case 'X': n = "RangeExpression", k = SW_Protocol; break;
    case 'x': n = "Strideable", k = SW_Protocol; break;
    case 'Y': n = "RawRepresentable", k = SW_Protocol; break;
    case 'y': n = "StringProtocol", k = SW_Protocol; break;
    case 'Z': n = "SignedInteger", k = SW_Protocol; break;
    case 'z': n = "BinaryInteger", k = SW_Protocol; break;
    default: return -1;
    }
    return swift_type(c, k, n);
}

static int demangle_standard_substitution(sw_ctx *c) {
    int ch = next(c);
    switch (ch) {
    case 'o': return sw_mk_text(c, SW_Module, "__C", 3);
    case 'C': return sw_mk_text(c, SW_Module, "__C_Synthesized", 15);
    case 'g': {
        int opt = swift_type(c, SW_Enum, "Optional");
        int t = type_of(c, sw_with2(c, SW_BoundGenericEnum, opt,
                                    sw_with(c, SW_TypeList, pop_kind(c, SW_Type))));
        add_subst(c, t);
        return t;
    }
    default: {
        push_back(c);
        long rep = 1;
        if (is_digit(peek(c))) rep = natural(c);
        if (rep < 0 || rep > 2048) return -1;
        int second = next_if(c, 'c');
        int nd = standard_subst(c, next(c), second);
        if (nd < 0) return -1;
        while (rep-- > 1) push(c, nd);
        return nd;
    }
    }
}

static int push_multi_subst(sw_ctx *c, long rep, long idx) {
    if (idx >= c->nsubst || rep > 2048) return -1;
    int nd = c->subst[idx];
    while (rep-- > 1) push(c, nd);
    return nd;
}

static int demangle_multi_substitutions(sw_ctx *c) {
    long rep = -1;
    for (;;) {
        int ch = next(c);
        if (ch == 0) return -1;
        if (is_lower(ch)) {
            int nd = push_multi_subst(c, rep, ch - 'a');
            if (nd < 0) return -1;
            push(c, nd);
            rep = -1;
            if (c->fail) return -1;
            continue;
        }
        if (is_upper(ch)) return push_multi_subst(c, rep, ch - 'A');
        if (ch == '_') {
            long idx = rep + 27;
            if (idx < 0 || idx >= c->nsubst) return -1;
            return c->subst[idx];
        }
        push_back(c);
        rep = natural(c);
        if (rep < 0) return -1;
    }
}

static int demangle_any_generic_type(sw_ctx *c, int kind) {
    int name = pop_if(c, is_decl_name);
    int ctx = pop_context(c);
    int t = type_of(c, sw_with2(c, kind, ctx, name));
    add_subst(c, t);
    return t;
}

static int generic_param(sw_ctx *c, uint64_t depth, uint64_t index) {
    int d = sw_mk_index(c, SW_Index, depth);
    int i = sw_mk_index(c, SW_Index, index);
    return sw_with2(c, SW_DependentGenericParamType, d, i);
}

static int demangle_generic_param_index(sw_ctx *c) {
    if (next_if(c, 'd')) {
        long d = dindex(c);
        long i = dindex(c);
        if (d < 0 || i < 0) return -1;
        return generic_param(c, (uint64_t)d + 1, (uint64_t)i);
    }
    if (next_if(c, 'z')) return generic_param(c, 0, 0);
    if (next_if(c, 's')) return sw_mk(c, SW_ConstrainedExistentialSelf);
    long i = dindex(c);
    if (i < 0) return -1;
    return generic_param(c, 0, (uint64_t)i + 1);
}

static int pop_assoc_type_name(sw_ctx *c) {
    int proto = pop_kind(c, SW_Type);
    if (proto >= 0 && !is_protocol_type(c, proto)) return -1;
    int id = pop_kind(c, SW_Identifier);
    if (id < 0) return -1;
    int at = sw_mk_text(c, SW_DependentAssociatedTypeRef, c->nodes[id].text, c->nodes[id].tlen);
    sw_add(c, at, sw_mk_text(c, SW_Identifier, c->nodes[id].text, c->nodes[id].tlen));
    add_opt(c, at, proto);
    return at;
}

static int assoc_simple(sw_ctx *c, int base) {
    int name = pop_assoc_type_name(c);
    int bt = base >= 0 ? type_of(c, base) : pop_kind(c, SW_Type);
    return type_of(c, sw_with2(c, SW_DependentMemberType, bt, name));
}

static int assoc_compound(sw_ctx *c, int base) {
    int names[64], nn = 0, first = 0;
    do {
        first = pop_kind(c, SW_FirstElementMarker) >= 0;
        int n = pop_assoc_type_name(c);
        if (n < 0 || nn >= 64) return -1;
        names[nn++] = n;
    } while (!first);
    int bt = base >= 0 ? type_of(c, base) : pop_kind(c, SW_Type);
    while (nn > 0) bt = type_of(c, sw_with2(c, SW_DependentMemberType, bt, names[--nn]));
    return bt;
}

static int demangle_archetype(sw_ctx *c) {
    int t;
    switch (next(c)) {
    case 'a': {
        int id = pop_kind(c, SW_Identifier);
        int arch = pop_type_child(c);
        t = type_of(c, sw_with2(c, SW_AssociatedTypeRef, arch, id));
        add_subst(c, t);
        return t;
    }
    case 'O': return sw_with(c, SW_OpaqueReturnTypeOf, pop_context(c));
    case 'o': {
        long idx = dindex(c);
        if (idx < 0) return -1;
        /* bound generic argument lists of the opaque type's context */
        int lists[16], nl = 0;
        for (;;) {
            int tl = sw_mk(c, SW_TypeList);
            if (nl >= 16) return -1;
            lists[nl++] = tl;
            int ty;
            while ((ty = pop_kind(c, SW_Type)) >= 0) sw_add(c, tl, ty);
            reverse_kids(c, tl, 0);
            if (pop_kind(c, SW_EmptyList) >= 0) break;
            if (pop_kind(c, SW_FirstElementMarker) < 0) return -1;
        }
        int name = pop(c);
        int op = sw_mk(c, SW_OpaqueType);
        op = sw_add(c, op, name);
        op = sw_add(c, op, sw_mk_index(c, SW_Index, (uint64_t)idx));
        int tll = sw_mk(c, SW_TypeList);
        for (int i = 0; i < nl; i++) sw_add(c, tll, lists[i]);
        op = sw_add(c, op, tll);
        t = type_of(c, op);
        add_subst(c, t);
        return t;
    }
    case 'r': return type_of(c, sw_mk(c, SW_OpaqueReturnType));
    case 'R': {
        long o = dindex(c);
        if (o < 0) return -1;
        return type_of(c, sw_with(c, SW_OpaqueReturnType, sw_mk_index(c, SW_OpaqueReturnTypeIndex, (uint64_t)o)));
    }
    case 'x': t = assoc_simple(c, -1); break;
    case 'X': t = assoc_compound(c, -1); break;
    case 'y': t = assoc_simple(c, demangle_generic_param_index(c)); break;
    case 'Y': t = assoc_compound(c, demangle_generic_param_index(c)); break;
    case 'z': t = assoc_simple(c, generic_param(c, 0, 0)); break;
    case 'Z': t = assoc_compound(c, generic_param(c, 0, 0)); break;
    default: return -1;
    }
    add_subst(c, t);
    return t;
}

static int demangle_builtin_type(sw_ctx *c) {
    char buf[64];
    const char *n = NULL;
    switch (next(c)) {
    case 'b': n = "Builtin.BridgeObject"; break;
    case 'B': n = "Builtin.UnsafeValueBuffer"; break;
    case 'e': n = "Builtin.Executor"; break;
    case 'I': n = "Builtin.IntLiteral"; break;
    case 'O': n = "Builtin.UnknownObject"; break;
    case 'o': n = "Builtin.NativeObject"; break;
    case 'p': n = "Builtin.RawPointer"; break;
    case 'j': n = "Builtin.Job"; break;
    case 'D': n = "Builtin.DefaultActorStorage"; break;
    case 'd': n = "Builtin.NonDefaultDistributedActorStorage"; break;
    case 'c': n = "Builtin.RawUnsafeContinuation"; break;
    case 't': n = "Builtin.SILToken"; break;
    case 'w': n = "Builtin.Word"; break;
    case 'P': n = "Builtin.PackIndex"; break;
    case 'f': case 'i': {
        int f = c->s[c->pos - 1] == 'f';
        long size = dindex(c) - 1;
        if (size <= 0 || size > 4096) return -1;
        int l = 0;
        const char *p = f ? "Builtin.FPIEEE" : "Builtin.Int";
        while (*p) buf[l++] = *p++;
        char d[12];
        int nd = 0;
        while (size) d[nd++] = (char)('0' + size % 10), size /= 10;
        while (nd) buf[l++] = d[--nd];
        const char *t = sw_pool_put(c, buf, (size_t)l);
        return t ? type_of(c, sw_mk_text(c, SW_BuiltinTypeName, t, (size_t)l)) : -1;
    }
    case 'v': {
        long elts = dindex(c) - 1;
        if (elts <= 0 || elts > 4096) return -1;
        int el = pop_type_child(c);
        if (sw_kind_of(c, el) != SW_BuiltinTypeName || c->nodes[el].tlen < 8 ||
            memcmp(c->nodes[el].text, "Builtin.", 8) != 0)
            return -1;
        int l = 0;
        const char *p = "Builtin.Vec";
        while (*p) buf[l++] = *p++;
        char d[12];
        int nd = 0;
        while (elts) d[nd++] = (char)('0' + elts % 10), elts /= 10;
        while (nd) buf[l++] = d[--nd];
        buf[l++] = 'x';
        size_t rest = c->nodes[el].tlen - 8;
        if (rest > sizeof buf - (size_t)l) return -1;
        memcpy(buf + l, c->nodes[el].text + 8, rest);
        l += (int)rest;
        const char *t = sw_pool_put(c, buf, (size_t)l);
        return t ? type_of(c, sw_mk_text(c, SW_BuiltinTypeName, t, (size_t)l)) : -1;
    }
    default: return -1;
    }
    return type_of(c, sw_mk_text(c, SW_BuiltinTypeName, n, strlen(n)));
}

static int bound_generic_args(sw_ctx *c, int nominal, const int *lists, int nlists, int idx, int depth) {
    /* more argument lists than levels of nesting: nothing to bind them to */
    if (nominal < 0 || idx >= nlists || depth > 64 || nkids(c, nominal) == 0) return -1;
    int ctx = sw_child(c, nominal, 0);
    int consumes = 1;
    switch (sw_kind_of(c, nominal)) {
    case SW_Variable: case SW_ExplicitClosure: case SW_Subscript: consumes = 0; break;
    default: break;
    }
    int args = lists[idx];
    if (consumes) idx++;
    if (idx < nlists) {
        int parent;
        if (sw_kind_of(c, ctx) == SW_Extension) {
            parent = bound_generic_args(c, sw_child(c, ctx, 1), lists, nlists, idx, depth + 1);
            parent = sw_with2(c, SW_Extension, sw_child(c, ctx, 0), parent);
            if (nkids(c, ctx) == 3) add_opt(c, parent, sw_child(c, ctx, 2));
        } else {
            parent = bound_generic_args(c, ctx, lists, nlists, idx, depth + 1);
        }
        int nn = sw_with(c, sw_kind_of(c, nominal), parent);
        if (nn < 0) return -1;
        for (unsigned i = 1; i < nkids(c, nominal); i++) sw_add(c, nn, sw_child(c, nominal, i));
        nominal = nn;
    }
    if (!consumes || nkids(c, args) == 0) return nominal;
    int kind;
    switch (sw_kind_of(c, nominal)) {
    case SW_Class: kind = SW_BoundGenericClass; break;
    case SW_Protocol: kind = SW_BoundGenericProtocol; break;
    case SW_Structure: kind = SW_BoundGenericStructure; break;
    case SW_Enum: kind = SW_BoundGenericEnum; break;
    case SW_OtherNominalType: kind = SW_BoundGenericOtherNominalType; break;
    case SW_TypeAlias: kind = SW_BoundGenericTypeAlias; break;
    case SW_Function: case SW_Constructor:
        return sw_with2(c, SW_BoundGenericFunction, nominal, args);
    default: return -1;
    }
    return sw_with2(c, kind, type_of(c, nominal), args);
}

static int pop_retroactive_conformances(sw_ctx *c) {
    int list = -1;
    while (top_kind(c) == SW_RetroactiveConformance) {
        if (list < 0) list = sw_mk(c, SW_TypeList);
        sw_add(c, list, pop(c));
    }
    if (list >= 0) reverse_kids(c, list, 0);
    return list;
}

static int demangle_bound_generics(sw_ctx *c, int *lists, int *nl, int *retro) {
    *retro = pop_retroactive_conformances(c);
    *nl = 0;
    for (;;) {
        if (*nl >= 16) return 0;
        int tl = sw_mk(c, SW_TypeList);
        if (tl < 0) return 0;
        lists[(*nl)++] = tl;
        int ty;
        while ((ty = pop_kind(c, SW_Type)) >= 0) sw_add(c, tl, ty);
        reverse_kids(c, tl, 0);
        if (pop_kind(c, SW_EmptyList) >= 0) break;
        if (pop_kind(c, SW_FirstElementMarker) < 0) return 0;
    }
    return 1;
}

static int demangle_bound_generic_type(sw_ctx *c) {
    int lists[16], nl, retro;
    if (!demangle_bound_generics(c, lists, &nl, &retro)) return -1;
    int nominal = pop_type_any_generic(c);
    int b = bound_generic_args(c, nominal, lists, nl, 0, 0);
    if (b < 0) return -1;
    add_opt(c, b, retro);
    int t = type_of(c, b);
    add_subst(c, t);
    return t;
}

static int is_any_conformance(int k);
static int demangle_retroactive_conformance(sw_ctx *c) {
    int idx = index_node(c);
    int conf = pop_if(c, is_any_conformance);
    return sw_with2(c, SW_RetroactiveConformance, idx, conf);
}

static int demangle_generic_signature(sw_ctx *c, int counts) {
    int sig = sw_mk(c, SW_DependentGenericSignature);
    if (sig < 0) return -1;
    if (counts) {
        int guard = 0;
        while (!next_if(c, 'l')) {
            long cnt = 0;
            if (!next_if(c, 'z')) {
                cnt = dindex(c);
                if (cnt < 0) return -1;
                cnt += 1;
            }
            if (++guard > 64) return -1;
            sw_add(c, sig, sw_mk_index(c, SW_DependentGenericParamCount, (uint64_t)cnt));
        }
    } else {
        sw_add(c, sig, sw_mk_index(c, SW_DependentGenericParamCount, 1));
    }
    unsigned ncounts = nkids(c, sig);
    int r;
    while ((r = pop_if(c, is_requirement)) >= 0) sw_add(c, sig, r);
    reverse_kids(c, sig, ncounts);
    return sig;
}

static int demangle_generic_requirement(sw_ctx *c) {
    enum { GEN, ASSOC, COMPOUND, SUBST } tk;
    enum { PROTO, BASECLASS, SAMETYPE, LAYOUT } ck;
    switch (next(c)) {
    case 'c': ck = BASECLASS, tk = ASSOC; break;
    case 'C': ck = BASECLASS, tk = COMPOUND; break;
    case 'b': ck = BASECLASS, tk = GEN; break;
    case 'B': ck = BASECLASS, tk = SUBST; break;
    case 't': ck = SAMETYPE, tk = ASSOC; break;
    case 'T': ck = SAMETYPE, tk = COMPOUND; break;
    case 's': ck = SAMETYPE, tk = GEN; break;
    case 'S': ck = SAMETYPE, tk = SUBST; break;
    case 'm': ck = LAYOUT, tk = ASSOC; break;
    case 'M': ck = LAYOUT, tk = COMPOUND; break;
    case 'l': ck = LAYOUT, tk = GEN; break;
    case 'L': ck = LAYOUT, tk = SUBST; break;
    case 'p': ck = PROTO, tk = ASSOC; break;
    case 'P': ck = PROTO, tk = COMPOUND; break;
    case 'Q': ck = PROTO, tk = SUBST; break;
    default: ck = PROTO, tk = GEN; push_back(c); break;
    }
    int ty = -1;
    switch (tk) {
    case GEN: ty = type_of(c, demangle_generic_param_index(c)); break;
    case ASSOC: ty = assoc_simple(c, demangle_generic_param_index(c)); add_subst(c, ty); break;
    case COMPOUND: ty = assoc_compound(c, demangle_generic_param_index(c)); add_subst(c, ty); break;
    case SUBST: ty = pop_kind(c, SW_Type); break;
    }
    switch (ck) {
    case PROTO: return sw_with2(c, SW_DependentGenericConformanceRequirement, ty, pop_protocol(c));
    case BASECLASS:
        return sw_with2(c, SW_DependentGenericConformanceRequirement, ty, pop_kind(c, SW_Type));
    case SAMETYPE:
        return sw_with2(c, SW_DependentGenericSameTypeRequirement, ty, pop_kind(c, SW_Type));
    case LAYOUT: {
        int ch = next(c);
        int size = -1, align = -1;
        switch (ch) {
        case 'U': case 'R': case 'N': case 'C': case 'D': case 'T': break;
        case 'E': case 'M':
            size = index_node(c);
            if (size < 0) return -1;
            align = index_node(c);
            break;
        case 'e': case 'm': case 'S':
            size = index_node(c);
            if (size < 0) return -1;
            break;
        default: return -1;
        }
        int name = sw_mk_text(c, SW_Identifier, c->s + c->pos - 1, 1);
        if (size >= 0) name = sw_mk_text(c, SW_Identifier, strchr("EMemS", ch), 1);
        int req = sw_with2(c, SW_DependentGenericLayoutRequirement, ty, name);
        add_opt(c, req, size);
        add_opt(c, req, align);
        return req;
    }
    }
    return -1;
}

static int demangle_protocol_list(sw_ctx *c) {
    int tl = sw_mk(c, SW_TypeList);
    int pl = sw_with(c, SW_ProtocolList, tl);
    if (pop_kind(c, SW_EmptyList) < 0) {
        int first = 0;
        do {
            first = pop_kind(c, SW_FirstElementMarker) >= 0;
            int p = pop_protocol(c);
            if (p < 0) return -1;
            sw_add(c, tl, p);
        } while (!first && !c->fail);
        reverse_kids(c, tl, 0);
    }
    return pl;
}

static int demangle_special_type(sw_ctx *c) {
    switch (next(c)) {
    case 'E': return pop_function_type(c, SW_NoEscapeFunctionType);
    case 'A': return pop_function_type(c, SW_EscapingAutoClosureType);
    case 'f': return pop_function_type(c, SW_ThinFunctionType);
    case 'K': return pop_function_type(c, SW_AutoClosureType);
    case 'U': return pop_function_type(c, SW_UncurriedFunctionType);
    case 'L': return pop_function_type(c, SW_EscapingObjCBlock);
    case 'B': return pop_function_type(c, SW_ObjCBlock);
    case 'C': return pop_function_type(c, SW_CFunctionPointer);
    case 'o': return type_of(c, sw_with(c, SW_Unowned, pop_kind(c, SW_Type)));
    case 'u': return type_of(c, sw_with(c, SW_Unmanaged, pop_kind(c, SW_Type)));
    case 'w': return type_of(c, sw_with(c, SW_Weak, pop_kind(c, SW_Type)));
    case 'b': return type_of(c, sw_with(c, SW_SILBoxType, pop_kind(c, SW_Type)));
    case 'D': return type_of(c, sw_with(c, SW_DynamicSelf, pop_kind(c, SW_Type)));
    case 'M': case 'm': {
        int ex = c->s[c->pos - 1] == 'm';
        const char *r;
        switch (next(c)) {
        case 't': r = "@thin"; break;
        case 'T': r = "@thick"; break;
        case 'o': r = "@objc_metatype"; break;
        default: return -1;
        }
        int rep = sw_mk_text(c, SW_MetatypeRepresentation, r, strlen(r));
        return type_of(c, sw_with2(c, ex ? SW_ExistentialMetatype : SW_Metatype, rep, pop_kind(c, SW_Type)));
    }
    case 'p': return type_of(c, sw_with(c, SW_ExistentialMetatype, pop_kind(c, SW_Type)));
    case 'c': {
        int super = pop_kind(c, SW_Type);
        int protos = demangle_protocol_list(c);
        return type_of(c, sw_with2(c, SW_ProtocolListWithClass, protos, super));
    }
    case 'l': return type_of(c, sw_with(c, SW_ProtocolListWithAnyObject, demangle_protocol_list(c)));
    case 'e': return type_of(c, sw_mk(c, SW_ErrorType));
    case 'x': case 'X': {
        /* a SIL box with its field layout, generic when 'X' */
        int sig = -1, args = -1;
        if (c->s[c->pos - 1] == 'X') {
            sig = pop_kind(c, SW_DependentGenericSignature);
            if (sig < 0) return -1;
            args = pop_type_list(c);
            if (args < 0) return -1;
        }
        int fields = pop_type_list(c);
        if (fields < 0) return -1;
        int layout = sw_mk(c, SW_SILBoxLayout);
        for (unsigned i = 0; i < nkids(c, fields); i++) {
            int ft = sw_child(c, fields, i);
            int inner = sw_child(c, ft, 0);
            int mut = sw_kind_of(c, inner) == SW_InOut;
            if (mut) ft = type_of(c, sw_child(c, inner, 0));
            sw_add(c, layout, sw_with(c, mut ? SW_SILBoxMutableField : SW_SILBoxImmutableField, ft));
        }
        int box = sw_with(c, SW_SILBoxTypeWithLayout, layout);
        if (sig >= 0) box = sw_add(c, sw_add(c, box, sig), args);
        return type_of(c, box);
    }
    case 'P': {
        int reqs = sw_mk(c, SW_ConstrainedExistentialRequirementList);
        int first = 0, r;
        int guard = 0;
        while (!first && guard++ < 256) {
            first = pop_kind(c, SW_FirstElementMarker) >= 0;
            r = pop_if(c, is_requirement);
            if (r < 0) return -1;
            sw_add(c, reqs, r);
        }
        reverse_kids(c, reqs, 0);
        int base = pop_kind(c, SW_Type);
        return type_of(c, sw_with2(c, SW_ConstrainedExistential, base, reqs));
    }
    case 'S': {
        switch (next(c)) {
        case 'q': return type_of(c, sw_with(c, SW_SugaredOptional, pop_kind(c, SW_Type)));
        case 'a': return type_of(c, sw_with(c, SW_SugaredArray, pop_kind(c, SW_Type)));
        case 'D': {
            int v = pop_kind(c, SW_Type);
            int k = pop_kind(c, SW_Type);
            return type_of(c, sw_with2(c, SW_SugaredDictionary, k, v));
        }
        case 'p': return type_of(c, sw_with(c, SW_SugaredParen, pop_kind(c, SW_Type)));
        default: return -1;
        }
    }
    default: return -1;
    }
}

static int demangle_type_annotation(sw_ctx *c) {
    switch (next(c)) {
    case 'a': return sw_mk(c, SW_AsyncAnnotation);
    case 'A': return sw_mk(c, SW_IsolatedAnyFunctionType);
    case 'b': return sw_mk(c, SW_ConcurrentFunctionType);
    case 'c': return sw_with(c, SW_GlobalActorFunctionType, pop_type_child(c));
    case 'i': return type_of(c, sw_with(c, SW_Isolated, pop_type_child(c)));
    case 'j': {
        int k = next(c);
        if (k != 'f' && k != 'r' && k != 'd' && k != 'l') return -1;
        return sw_mk_index(c, SW_DifferentiableFunctionType, (uint64_t)k);
    }
    case 'k': return type_of(c, sw_with(c, SW_NoDerivative, pop_type_child(c)));
    case 'K': return sw_with(c, SW_TypedThrowsAnnotation, pop_type_child(c));
    case 't': return type_of(c, sw_with(c, SW_CompileTimeConst, pop_type_child(c)));
    case 'T': return sw_mk(c, SW_SendingResultFunctionType);
    case 'u': return type_of(c, sw_with(c, SW_Sending, pop_type_child(c)));
    case 'l': case 'L': {
        /* lifetime dependence of a parameter (Yl) or of self (YL): scope or inherit */
        int self = c->s[c->pos - 1] == 'L';
        int k = next(c);
        if (k != 's' && k != 'i') return -1;
        if (self) return sw_mk_index(c, SW_SelfLifetimeDependence, (uint64_t)k);
        int dep = sw_mk_index(c, SW_LifetimeDependence, (uint64_t)k);
        return type_of(c, sw_add(c, dep, pop_type_child(c)));
    }
    default: return -1;
    }
}

/* ---- impl function types (SIL) ---- */

static int impl_param_conv(sw_ctx *c, int kind) {
    const char *a;
    switch (next(c)) {
    case 'i': a = "@in"; break;
    case 'c': a = "@in_constant"; break;
    case 'l': a = "@inout"; break;
    case 'b': a = "@inout_aliasable"; break;
    case 'n': a = "@in_guaranteed"; break;
    case 'X': a = "@in_cxx"; break;
    case 'x': a = "@owned"; break;
    case 'g': a = "@guaranteed"; break;
    case 'e': a = "@deallocating"; break;
    case 'y': a = "@unowned"; break;
    case 'v': a = "@pack_owned"; break;
    case 'p': a = "@pack_guaranteed"; break;
    case 'm': a = "@pack_inout"; break;
    default: push_back(c); return -1;
    }
    return sw_with(c, kind, sw_mk_text(c, SW_ImplConvention, a, strlen(a)));
}

static int impl_result_conv(sw_ctx *c, int kind) {
    const char *a;
    switch (next(c)) {
    case 'r': a = "@out"; break;
    case 'o': a = "@owned"; break;
    case 'd': a = "@unowned"; break;
    case 'u': a = "@unowned_inner_pointer"; break;
    case 'a': a = "@autoreleased"; break;
    case 'k': a = "@pack_out"; break;
    default: push_back(c); return -1;
    }
    return sw_with(c, kind, sw_mk_text(c, SW_ImplConvention, a, strlen(a)));
}

static int demangle_impl_function_type(sw_ctx *c) {
    int type = sw_mk(c, SW_ImplFunctionType);
    if (type < 0) return -1;
    if (next_if(c, 's')) {
        int lists[16], nl, retro;
        if (!demangle_bound_generics(c, lists, &nl, &retro) || nl != 1) return -1;
        int sig = pop_kind(c, SW_DependentGenericSignature);
        if (sig < 0) return -1;
        int subs = sw_with(c, SW_ImplPatternSubstitutions, sig);
        for (unsigned i = 0; i < nkids(c, lists[0]); i++) sw_add(c, subs, sw_child(c, lists[0], i));
        add_opt(c, subs, retro);
        sw_add(c, type, subs);
    }
    if (next_if(c, 'I')) {
        int lists[16], nl, retro;
        if (!demangle_bound_generics(c, lists, &nl, &retro) || nl != 1) return -1;
        int subs = sw_mk(c, SW_ImplInvocationSubstitutions);
        for (unsigned i = 0; i < nkids(c, lists[0]); i++) sw_add(c, subs, sw_child(c, lists[0], i));
        add_opt(c, subs, retro);
        sw_add(c, type, subs);
    }
    int sig = pop_kind(c, SW_DependentGenericSignature);
    if (sig >= 0 && next_if(c, 'P')) { /* pseudogeneric: printed the same */ }
    if (next_if(c, 'e')) sw_add(c, type, sw_mk(c, SW_ImplEscaping));
    if (next_if(c, 'A')) sw_add(c, type, sw_mk(c, SW_ImplErasedIsolation));
    int p = peek(c);
    if (p == 'd' || p == 'l' || p == 'f' || p == 'r')
        sw_add(c, type, sw_mk_index(c, SW_ImplDifferentiabilityKind, (uint64_t)next(c)));
    const char *ca;
    switch (next(c)) {
    case 'y': ca = "@callee_unowned"; break;
    case 'g': ca = "@callee_guaranteed"; break;
    case 'x': ca = "@callee_owned"; break;
    case 't': ca = "@convention(thin)"; break;
    default: return -1;
    }
    sw_add(c, type, sw_mk_text(c, SW_ImplConvention, ca, strlen(ca)));
    const char *fa = NULL;
    switch (next(c)) {
    case 'B': fa = "block"; break;
    case 'C': fa = "c"; break;
    case 'M': fa = "method"; break;
    case 'O': fa = "objc_method"; break;
    case 'K': fa = "closure"; break;
    case 'W': fa = "witness_method"; break;
    case 'z': return -1; /* with a Clang type: not supported */
    default: push_back(c); break;
    }
    if (fa)
        sw_add(c, type, sw_with(c, SW_ImplFunctionConvention,
                                sw_mk_text(c, SW_ImplFunctionConventionName, fa, strlen(fa))));
    const char *co = NULL;
    if (next_if(c, 'A')) co = "@yield_once";
    else if (next_if(c, 'I')) co = "@yield_once_2";
    else if (next_if(c, 'G')) co = "@yield_many";
    if (co) sw_add(c, type, sw_mk_text(c, SW_ImplCoroutineKind, co, strlen(co)));
    if (next_if(c, 'h')) sw_add(c, type, sw_mk_text(c, SW_ImplFunctionAttribute, "@Sendable", 9));
    if (next_if(c, 'H')) sw_add(c, type, sw_mk_text(c, SW_ImplFunctionAttribute, "@async", 6));
    if (next_if(c, 'T')) sw_add(c, type, sw_mk(c, SW_ImplSendingResult));
    add_opt(c, type, sig);
    int ntypes = 0, par;
    while ((par = impl_param_conv(c, SW_ImplParameter)) >= 0) {
        sw_add(c, type, par);
        if (next_if(c, 'w'))
            sw_add(c, par, sw_mk_text(c, SW_ImplParameterResultDifferentiability, "@noDerivative", 13));
        if (next_if(c, 'T')) sw_add(c, par, sw_mk(c, SW_ImplParameterSending));
        if (++ntypes > 256) return -1;
    }
    while ((par = impl_result_conv(c, SW_ImplResult)) >= 0) {
        sw_add(c, type, par);
        if (next_if(c, 'w'))
            sw_add(c, par, sw_mk_text(c, SW_ImplParameterResultDifferentiability, "@noDerivative", 13));
        if (++ntypes > 256) return -1;
    }
    while (next_if(c, 'Y')) {
        par = impl_param_conv(c, SW_ImplYield);
        if (par < 0) return -1;
        sw_add(c, type, par);
        if (++ntypes > 256) return -1;
    }
    if (next_if(c, 'z')) {
        par = impl_result_conv(c, SW_ImplErrorResult);
        if (par < 0) return -1;
        sw_add(c, type, par);
        ntypes++;
    }
    if (!next_if(c, '_')) return -1;
    unsigned nk = nkids(c, type);
    for (int i = 0; i < ntypes; i++) {
        int t = pop_kind(c, SW_Type);
        if (t < 0 || (unsigned)i >= nk) return -1;
        sw_add(c, sw_child(c, type, nk - (unsigned)i - 1), t);
    }
    return type_of(c, type);
}

/* ---- entities ---- */

static int demangle_accessor(sw_ctx *c, int child) {
    int k;
    switch (next(c)) {
    case 'm': k = SW_MaterializeForSet; break;
    case 's': k = SW_Setter; break;
    case 'g': k = SW_Getter; break;
    case 'G': k = SW_GlobalGetter; break;
    case 'w': k = SW_WillSet; break;
    case 'W': k = SW_DidSet; break;
    case 'r': k = SW_ReadAccessor; break;
    case 'M': k = SW_ModifyAccessor; break;
    case 'i': k = SW_InitAccessor; break;
    case 'x': k = SW_Read2Accessor; break;
    case 'y': k = SW_Modify2Accessor; break;
    case 'a':
        switch (next(c)) {
        case 'O': k = SW_OwningMutableAddressor; break;
        case 'o': k = SW_NativeOwningMutableAddressor; break;
        case 'p': k = SW_NativePinningMutableAddressor; break;
        case 'u': k = SW_UnsafeMutableAddressor; break;
        default: return -1;
        }
        break;
    case 'l':
        switch (next(c)) {
        case 'O': k = SW_OwningAddressor; break;
        case 'o': k = SW_NativeOwningAddressor; break;
        case 'p': k = SW_NativePinningAddressor; break;
        case 'u': k = SW_UnsafeAddressor; break;
        default: return -1;
        }
        break;
    case 'p': return child;
    default: return -1;
    }
    return sw_with(c, k, child);
}

static int demangle_entity(sw_ctx *c, int kind) {
    int type = pop_kind(c, SW_Type);
    int labels = pop_function_param_labels(c, type);
    int name = pop_if(c, is_decl_name);
    int ctx = pop_context(c);
    if (labels >= 0) return sw_add(c, with3(c, kind, ctx, name, labels), type);
    return with3(c, kind, ctx, name, type);
}

static int demangle_plain_function(sw_ctx *c) {
    int sig = pop_kind(c, SW_DependentGenericSignature);
    int type = pop_function_type(c, SW_FunctionType);
    int labels = pop_function_param_labels(c, type);
    if (sig >= 0) type = type_of(c, sw_with2(c, SW_DependentGenericType, sig, type));
    int name = pop_if(c, is_decl_name);
    int ctx = pop_context(c);
    if (labels >= 0) return sw_add(c, with3(c, SW_Function, ctx, name, labels), type);
    return with3(c, SW_Function, ctx, name, type);
}

static int demangle_subscript(sw_ctx *c) {
    int priv = pop_kind(c, SW_PrivateDeclName);
    int type = pop_kind(c, SW_Type);
    int labels = pop_function_param_labels(c, type);
    int ctx = pop_context(c);
    if (type < 0) return -1;
    int s = sw_with(c, SW_Subscript, ctx);
    add_opt(c, s, labels);
    s = sw_add(c, s, type);
    add_opt(c, s, priv);
    return demangle_accessor(c, s);
}

static int demangle_function_entity(sw_ctx *c) {
    enum { NONE, TYPE_PRIV, TYPE_INDEX, INDEX } args;
    int k;
    switch (next(c)) {
    case 'D': args = NONE, k = SW_Deallocator; break;
    case 'd': args = NONE, k = SW_Destructor; break;
    case 'Z': args = NONE, k = SW_IsolatedDeallocator; break;
    case 'E': args = NONE, k = SW_IVarDestroyer; break;
    case 'e': args = NONE, k = SW_IVarInitializer; break;
    case 'i': args = NONE, k = SW_Initializer; break;
    case 'C': args = TYPE_PRIV, k = SW_Allocator; break;
    case 'c': args = TYPE_PRIV, k = SW_Constructor; break;
    case 'U': args = TYPE_INDEX, k = SW_ExplicitClosure; break;
    case 'u': args = TYPE_INDEX, k = SW_ImplicitClosure; break;
    case 'A': args = INDEX, k = SW_DefaultArgumentInitializer; break;
    case 'm': return demangle_entity(c, SW_Macro);
    case 'p': return demangle_entity(c, SW_GenericTypeParamDecl);
    case 'P': args = NONE, k = SW_PropertyWrapperBackingInitializer; break;
    case 'W': args = NONE, k = SW_PropertyWrapperInitFromProjectedValue; break;
    case 'M': {
        int kk;
        switch (next(c)) {
        case 'f': kk = SW_FreestandingMacroExpansion; break;
        case 'p': kk = SW_PeerAttachedMacroExpansion; break;
        case 'm': kk = SW_MemberAttachedMacroExpansion; break;
        case 'a': kk = SW_AccessorAttachedMacroExpansion; break;
        case 'r': kk = SW_MemberAttributeAttachedMacroExpansion; break;
        case 'c': kk = SW_ConformanceAttachedMacroExpansion; break;
        case 'e': kk = SW_ExtensionAttachedMacroExpansion; break;
        case 'b': kk = SW_BodyAttachedMacroExpansion; break;
        case 'q': kk = SW_PreambleAttachedMacroExpansion; break;
        case 'u': {
            int idx = index_node(c);
            int name = pop_kind(c, SW_Identifier);
            int ctx = pop_context(c);
            return with3(c, SW_MacroExpansionUniqueName, ctx, name, idx);
        }
        default: return -1;
        }
        int idx = index_node(c);
        int macro = pop_kind(c, SW_Identifier);
        int priv = pop_kind(c, SW_PrivateDeclName);
        int attached = kk == SW_FreestandingMacroExpansion ? -1 : pop_if(c, is_decl_name);
        int ctx = pop_context(c);
        int r;
        if (kk == SW_FreestandingMacroExpansion) {
            /* a private discriminator follows the macro's name: "name(in _ABC)" */
            r = with3(c, kk, ctx, macro, idx);
            add_opt(c, r, priv);
        } else {
            r = sw_add(c, with3(c, kk, ctx, attached, macro), idx);
            add_opt(c, r, priv);
        }
        return r;
    }
    default: return -1;
    }
    int name = -1, ptype = -1, labels = -1;
    switch (args) {
    case NONE: break;
    case TYPE_PRIV:
        name = pop_kind(c, SW_PrivateDeclName);
        ptype = pop_kind(c, SW_Type);
        labels = pop_function_param_labels(c, ptype);
        break;
    case TYPE_INDEX:
        name = index_node(c);
        ptype = pop_kind(c, SW_Type);
        break;
    case INDEX: name = index_node(c); break;
    }
    int e = sw_with(c, k, pop_context(c));
    switch (args) {
    case NONE: break;
    case INDEX: e = sw_add(c, e, name); break;
    case TYPE_PRIV:
        add_opt(c, e, labels);
        e = sw_add(c, e, ptype);
        add_opt(c, e, name);
        break;
    case TYPE_INDEX:
        e = sw_add(c, e, name);
        e = sw_add(c, e, ptype);
        break;
    }
    return e;
}

static int demangle_extension(sw_ctx *c) {
    int sig = pop_kind(c, SW_DependentGenericSignature);
    int mod = pop_module(c);
    int type = pop_type_any_generic(c);
    int e = sw_with2(c, SW_Extension, mod, type);
    add_opt(c, e, sig);
    return e;
}

/* ---- metadata, witnesses, thunks ---- */

static int with_popped_type(sw_ctx *c, int kind) { return sw_with(c, kind, pop_kind(c, SW_Type)); }

static int demangle_metatype(sw_ctx *c) {
    switch (next(c)) {
    case 'a': return with_popped_type(c, SW_TypeMetadataAccessFunction);
    case 'A': return sw_with(c, SW_ReflectionMetadataAssocTypeDescriptor, pop_protocol_conformance(c));
    case 'b': return with_popped_type(c, SW_CanonicalSpecializedGenericTypeMetadataAccessFunction);
    case 'B': return with_popped_type(c, SW_ReflectionMetadataBuiltinDescriptor);
    case 'c': return sw_with(c, SW_ProtocolConformanceDescriptor, pop_protocol_conformance(c));
    case 'C': {
        int t = pop_type_child(c);
        if (!is_any_generic(sw_kind_of(c, t))) return -1;
        return sw_with(c, SW_ReflectionMetadataSuperclassDescriptor, t);
    }
    case 'D': return with_popped_type(c, SW_TypeMetadataDemanglingCache);
    case 'f': return with_popped_type(c, SW_FullTypeMetadata);
    case 'F': return with_popped_type(c, SW_ReflectionMetadataFieldDescriptor);
    case 'i': return with_popped_type(c, SW_TypeMetadataInstantiationFunction);
    case 'I': return with_popped_type(c, SW_TypeMetadataInstantiationCache);
    case 'K': return with_popped_type(c, SW_MetadataInstantiationCache);
    case 'l': return with_popped_type(c, SW_TypeMetadataSingletonInitializationCache);
    case 'L': return with_popped_type(c, SW_TypeMetadataLazyCache);
    case 'm': return with_popped_type(c, SW_Metaclass);
    case 'M': return with_popped_type(c, SW_CanonicalSpecializedGenericMetaclass);
    case 'n': return with_popped_type(c, SW_NominalTypeDescriptor);
    case 'N': return with_popped_type(c, SW_NoncanonicalSpecializedGenericTypeMetadata);
    case 'o': return with_popped_type(c, SW_ClassMetadataBaseOffset);
    case 'p': return sw_with(c, SW_ProtocolDescriptor, pop_protocol(c));
    case 'P': return with_popped_type(c, SW_GenericTypeMetadataPattern);
    case 'Q': return sw_with(c, SW_OpaqueTypeDescriptor, pop(c));
    case 'r': return with_popped_type(c, SW_TypeMetadataCompletionFunction);
    case 's': return with_popped_type(c, SW_ObjCResilientClassStub);
    case 'S': return sw_with(c, SW_ProtocolSelfConformanceDescriptor, pop_protocol(c));
    case 't': return with_popped_type(c, SW_FullObjCResilientClassStub);
    case 'u': return with_popped_type(c, SW_MethodLookupFunction);
    case 'U': return with_popped_type(c, SW_ObjCMetadataUpdateFunction);
    case 'V': return sw_with(c, SW_PropertyDescriptor, pop_if(c, is_entity));
    case 'X': return sw_with(c, SW_ExtensionDescriptor, pop_context(c));
    default: return -1;
    }
}

static int pop_assoc_type_path(sw_ctx *c) {
    int path = sw_mk(c, SW_AssocTypePath);
    int first = 0, guard = 0;
    while (!first && guard++ < 64) {
        first = pop_kind(c, SW_FirstElementMarker) >= 0;
        int id = pop_if(c, is_decl_name);
        if (id < 0) return -1;
        sw_add(c, path, id);
    }
    reverse_kids(c, path, 0);
    return path;
}

static int index_subset(sw_ctx *c);
static int demangle_witness(sw_ctx *c) {
    int ch = next(c);
    switch (ch) {
    case 'C': return sw_with(c, SW_EnumCase, pop_if(c, is_entity));
    case 'V': return with_popped_type(c, SW_ValueWitnessTable);
    case 'v': {
        uint64_t d;
        switch (next(c)) {
        case 'd': d = 0; break;
        case 'i': d = 1; break;
        default: return -1;
        }
        return sw_with2(c, SW_FieldOffset, sw_mk_index(c, SW_Directness, d), pop_if(c, is_entity));
    }
    case 'S': return sw_with(c, SW_ProtocolSelfConformanceWitnessTable, pop_protocol(c));
    case 'P': return sw_with(c, SW_ProtocolWitnessTable, pop_protocol_conformance(c));
    case 'p': return sw_with(c, SW_ProtocolWitnessTablePattern, pop_protocol_conformance(c));
    case 'G': return sw_with(c, SW_GenericProtocolWitnessTable, pop_protocol_conformance(c));
    case 'I':
        return sw_with(c, SW_GenericProtocolWitnessTableInstantiationFunction, pop_protocol_conformance(c));
    case 'r': return sw_with(c, SW_ResilientProtocolWitnessTable, pop_protocol_conformance(c));
    case 'l': case 'L': {
        int conf = pop_protocol_conformance(c);
        int type = pop_kind(c, SW_Type);
        return sw_with2(c, ch == 'l' ? SW_LazyProtocolWitnessTableAccessor : SW_LazyProtocolWitnessTableCacheVariable,
                        type, conf);
    }
    case 'a': return sw_with(c, SW_ProtocolWitnessTableAccessor, pop_protocol_conformance(c));
    case 't': {
        int name = pop_if(c, is_decl_name);
        int conf = pop_protocol_conformance(c);
        return sw_with2(c, SW_AssociatedTypeMetadataAccessor, conf, name);
    }
    case 'T': {
        int proto = pop_kind(c, SW_Type);
        int path = pop_assoc_type_path(c);
        int conf = pop_protocol_conformance(c);
        return with3(c, SW_AssociatedTypeWitnessTableAccessor, conf, path, proto);
    }
    case 'b': {
        int proto = pop_kind(c, SW_Type);
        int conf = pop_protocol_conformance(c);
        return sw_with2(c, SW_BaseWitnessTableAccessor, conf, proto);
    }
    case 'J': {
        int r = sw_mk(c, SW_DifferentiabilityWitness);
        int sig = pop_kind(c, SW_DependentGenericSignature);
        int n;
        while ((n = pop(c)) >= 0) r = sw_add(c, r, n);
        reverse_kids(c, r, 0);
        int k = next(c);
        if (k != 'f' && k != 'r' && k != 'd' && k != 'l') return -1;
        r = sw_add(c, r, sw_mk_index(c, SW_Index, (uint64_t)k));
        r = sw_add(c, r, index_subset(c));
        if (!next_if(c, 'p')) return -1;
        r = sw_add(c, r, index_subset(c));
        if (!next_if(c, 'r')) return -1;
        add_opt(c, r, sig);
        return r;
    }
    case 'O': {
        int k;
        switch (next(c)) {
        case 'y': k = SW_OutlinedCopy; break;
        case 'e': k = SW_OutlinedConsume; break;
        case 'r': k = SW_OutlinedRetain; break;
        case 's': k = SW_OutlinedRelease; break;
        case 'b': k = SW_OutlinedInitializeWithTake; break;
        case 'c': k = SW_OutlinedInitializeWithCopy; break;
        case 'd': k = SW_OutlinedAssignWithTake; break;
        case 'f': k = SW_OutlinedAssignWithCopy; break;
        case 'h': k = SW_OutlinedDestroy; break;
        case 'B': k = SW_OutlinedInitializeWithTakeNoValueWitness; break;
        case 'C': k = SW_OutlinedInitializeWithCopyNoValueWitness; break;
        case 'D': k = SW_OutlinedAssignWithTakeNoValueWitness; break;
        case 'F': k = SW_OutlinedAssignWithCopyNoValueWitness; break;
        case 'H': k = SW_OutlinedDestroyNoValueWitness; break;
        default: return -1;
        }
        int sig = pop_kind(c, SW_DependentGenericSignature);
        int n = with_popped_type(c, k);
        add_opt(c, n, sig);
        return n;
    }
    default: return -1;
    }
}

static int demangle_spec_attributes(sw_ctx *c, int kind) {
    int mp = next_if(c, 'm');
    int ser = next_if(c, 'q');
    int ar = next_if(c, 'a');
    int pass = next(c) - '0';
    if (pass < 0 || pass > 9) return -1;
    int s = sw_mk(c, kind);
    if (mp) sw_add(c, s, sw_mk(c, SW_MetatypeParamsRemoved));
    if (ser) sw_add(c, s, sw_mk(c, SW_IsSerialized));
    if (ar) sw_add(c, s, sw_mk(c, SW_AsyncRemoved));
    sw_add(c, s, sw_mk_index(c, SW_SpecializationPassID, (uint64_t)pass));
    return s;
}

static int demangle_generic_specialization(sw_ctx *c, int kind) {
    int s = demangle_spec_attributes(c, kind);
    if (s < 0) return -1;
    int tl = pop_type_list(c);
    if (tl < 0) return -1;
    for (unsigned i = 0; i < nkids(c, tl); i++)
        sw_add(c, s, sw_with(c, SW_GenericSpecializationParam, sw_child(c, tl, i)));
    return s;
}

static int demangle_function_specialization(sw_ctx *c);

static int autodiff_kind(sw_ctx *c) {
    int k = next(c);
    if (k != 'f' && k != 'r' && k != 'd' && k != 'p') return -1;
    return sw_mk_index(c, SW_AutoDiffFunctionKind, (uint64_t)k);
}

static int index_subset(sw_ctx *c) {
    size_t st = c->pos;
    while (peek(c) == 'S' || peek(c) == 'U') next(c);
    if (c->pos == st) return -1;
    return sw_mk_text(c, SW_IndexSubset, c->s + st, c->pos - st);
}

/* Autodiff functions and thunks take everything parsed so far as their original. */
static int autodiff_thunk(sw_ctx *c, int kind) {
    int r = sw_mk(c, kind);
    int n;
    while ((n = pop(c)) >= 0) r = sw_add(c, r, n);
    reverse_kids(c, r, 0);
    r = sw_add(c, r, autodiff_kind(c));
    r = sw_add(c, r, index_subset(c));
    if (!next_if(c, 'p')) return -1;
    r = sw_add(c, r, index_subset(c));
    if (!next_if(c, 'r')) return -1;
    if (kind == SW_AutoDiffSubsetParametersThunk) {
        r = sw_add(c, r, index_subset(c));
        if (!next_if(c, 'P')) return -1;
    }
    return r;
}

static int demangle_thunk_or_specialization(sw_ctx *c) {
    int ch = next(c);
    switch (ch) {
    case 'c': return sw_with(c, SW_CurryThunk, pop_if(c, is_entity));
    case 'j': return sw_with(c, SW_DispatchThunk, pop_if(c, is_entity));
    case 'q': return sw_with(c, SW_MethodDescriptor, pop_if(c, is_entity));
    case 'o': return sw_mk(c, SW_ObjCAttribute);
    case 'O': return sw_mk(c, SW_NonObjCAttribute);
    case 'D': return sw_mk(c, SW_DynamicAttribute);
    case 'd': return sw_mk(c, SW_DirectMethodReferenceAttribute);
    case 'E': return sw_mk(c, SW_DistributedThunk);
    case 'F': return sw_mk(c, SW_DistributedAccessor);
    case 'a': return sw_mk(c, SW_PartialApplyObjCForwarder);
    case 'A': return sw_mk(c, SW_PartialApplyForwarder);
    case 'm': return sw_mk(c, SW_MergedFunction);
    case 'X': return sw_mk(c, SW_DynamicallyReplaceableFunctionVar);
    case 'x': return sw_mk(c, SW_DynamicallyReplaceableFunctionKey);
    case 'I': return sw_mk(c, SW_DynamicallyReplaceableFunctionImpl);
    case 'Y': case 'Q':
        return sw_with(c, ch == 'Q' ? SW_AsyncAwaitResumePartialFunction : SW_AsyncSuspendResumePartialFunction,
                       index_node(c));
    case 'C': return sw_with(c, SW_CoroutineContinuationPrototype, pop_kind(c, SW_Type));
    case 'V': {
        int base = pop_if(c, is_entity);
        int derived = pop_if(c, is_entity);
        return sw_with2(c, SW_VTableThunk, derived, base);
    }
    case 'W': {
        int ent = pop_if(c, is_entity);
        int conf = pop_protocol_conformance(c);
        return sw_with2(c, SW_ProtocolWitness, conf, ent);
    }
    case 'S': return sw_with(c, SW_ProtocolSelfConformanceWitness, pop_if(c, is_entity));
    case 'R': case 'r': case 'y': {
        int t = sw_mk(c, ch == 'R' ? SW_ReabstractionThunkHelper
                                   : ch == 'y' ? SW_ReabstractionThunkHelperWithSelf : SW_ReabstractionThunk);
        add_opt(c, t, pop_kind(c, SW_DependentGenericSignature));
        if (ch == 'y') add_opt(c, t, pop_kind(c, SW_Type));
        add_opt(c, t, pop_kind(c, SW_Type));
        add_opt(c, t, pop_kind(c, SW_Type));
        return t;
    }
    case 'g': return demangle_generic_specialization(c, SW_GenericSpecialization);
    case 'G': return demangle_generic_specialization(c, SW_GenericSpecializationNotReAbstracted);
    case 'B': return demangle_generic_specialization(c, SW_GenericSpecializationInResilienceDomain);
    case 's': return demangle_generic_specialization(c, SW_GenericSpecializationPrespecialized);
    case 'i': return demangle_generic_specialization(c, SW_InlinedGenericFunction);
    case 'p': case 'P': {
        int s = demangle_spec_attributes(c, ch == 'P' ? SW_GenericPartialSpecializationNotReAbstracted
                                                      : SW_GenericPartialSpecialization);
        return sw_add(c, s, sw_with(c, SW_GenericSpecializationParam, pop_kind(c, SW_Type)));
    }
    case 'f': return demangle_function_specialization(c);
    case 'K': case 'k': {
        int kind = ch == 'K' ? SW_KeyPathGetterThunkHelper : SW_KeyPathSetterThunkHelper;
        int serialized = next_if(c, 'q');
        int types[8], nt = 0;
        int t;
        while ((t = pop(c)) >= 0) {
            int k = sw_kind_of(c, t);
            if (k != SW_Type && k != SW_DependentGenericSignature) {
                push(c, t);
                break;
            }
            if (nt >= 8) return -1;
            types[nt++] = t;
        }
        int r = sw_with(c, kind, pop_if(c, is_entity));
        while (nt > 0) r = sw_add(c, r, types[--nt]);
        if (serialized) r = sw_add(c, r, sw_mk(c, SW_IsSerialized));
        return r;
    }
    case 'l': return sw_with(c, SW_AssociatedTypeDescriptor, pop_assoc_type_name(c));
    case 'L': return sw_with(c, SW_ProtocolRequirementsBaseDescriptor, pop_protocol(c));
    case 'n': case 'N': case 'b': {
        int req = pop_protocol(c);
        int path = ch == 'b' ? -1 : pop_assoc_type_path(c);
        int proto = pop_kind(c, SW_Type);
        if (ch == 'b') return sw_with2(c, SW_BaseConformanceDescriptor, proto, req);
        return with3(c, ch == 'n' ? SW_AssociatedConformanceDescriptor : SW_DefaultAssociatedConformanceAccessor,
                     proto, path, req);
    }
    case 'v': {
        long idx = dindex(c);
        if (idx < 0) return -1;
        int k = next_if(c, 'r') ? SW_OutlinedReadOnlyObject : SW_OutlinedVariable;
        return sw_mk_index(c, k, (uint64_t)idx);
    }
    case 'e': {
        char buf[128];
        size_t n = 0;
        if (next_if(c, '_')) return -1;
        int kind = next(c);
        if (kind != 'p' && kind != 'a' && kind != 'm') return -1;
        buf[n++] = (char)kind;
        for (;;) {
            int x = next(c);
            if (x == '_') break;
            if (x == 0 || n >= sizeof buf) return -1;
            if (x != 'n' && x != 'b' && x != 'g') return -1;
            buf[n++] = (char)x;
        }
        const char *t = sw_pool_put(c, buf, n);
        return t ? sw_mk_text(c, SW_OutlinedBridgedMethod, t, n) : -1;
    }
    case 'u': return sw_mk(c, SW_AsyncFunctionPointer);
    case 'J':
        switch (peek(c)) {
        case 'S': next(c); return autodiff_thunk(c, SW_AutoDiffSubsetParametersThunk);
        case 'O': {
            next(c);
            int r = sw_mk(c, SW_AutoDiffSelfReorderingReabstractionThunk);
            add_opt(c, r, pop_kind(c, SW_DependentGenericSignature));
            r = sw_add(c, r, pop_kind(c, SW_Type));
            r = sw_add(c, r, pop_kind(c, SW_Type));
            reverse_kids(c, r, 0);
            return sw_add(c, r, autodiff_kind(c));
        }
        case 'V': next(c); return autodiff_thunk(c, SW_AutoDiffDerivativeVTableThunk);
        default: return autodiff_thunk(c, SW_AutoDiffFunction);
        }
    case 'w':
        switch (next(c)) {
        case 'b': return sw_mk(c, SW_BackDeploymentThunk);
        case 'B': return sw_mk(c, SW_BackDeploymentFallback);
        case 'S': return sw_mk(c, SW_HasSymbolQuery);
        default: return -1;
        }
    default: return -1;
    }
}

static int is_any_conformance(int k) {
    return k == SW_ConcreteProtocolConformance || k == SW_DependentProtocolConformanceRoot ||
           k == SW_DependentProtocolConformanceInherited || k == SW_DependentProtocolConformanceAssociated;
}

static int pop_any_conformance_list(sw_ctx *c) {
    int list = sw_mk(c, SW_TypeList);
    if (pop_kind(c, SW_EmptyList) >= 0) return list;
    int first = 0, guard = 0;
    do {
        first = pop_kind(c, SW_FirstElementMarker) >= 0;
        int conf = pop_if(c, is_any_conformance);
        if (conf < 0 || ++guard > 256) return -1;
        sw_add(c, list, conf);
    } while (!first);
    reverse_kids(c, list, 0);
    return list;
}

static int is_dependent_conformance(int k) {
    return k == SW_DependentProtocolConformanceRoot || k == SW_DependentProtocolConformanceInherited ||
           k == SW_DependentProtocolConformanceAssociated;
}

/* HD, HI, HA: conformances of generic parameters (parsed only: Swift prints none of them). */
static int dependent_conformance(sw_ctx *c, int kind) {
    long idx = dindex(c);
    if (idx < 0) return -1;
    int conf = sw_mk(c, kind);
    if (idx > 0) sw_add(c, conf, sw_mk_index(c, SW_Index, (uint64_t)idx - 1));
    unsigned fixed = nkids(c, conf);
    if (kind == SW_DependentProtocolConformanceRoot) {
        conf = sw_add(c, conf, pop_protocol(c));
        return sw_add(c, conf, pop_kind(c, SW_Type));
    }
    if (kind == SW_DependentProtocolConformanceInherited) {
        conf = sw_add(c, conf, pop_protocol(c));
    } else {
        int proto = pop_protocol(c);
        int type = pop_kind(c, SW_Type);
        conf = sw_add(c, conf, sw_with2(c, SW_DependentAssociatedConformance, type, proto));
    }
    conf = sw_add(c, conf, pop_if(c, is_dependent_conformance));
    reverse_kids(c, conf, fixed);
    return conf;
}

static int demangle_H(sw_ctx *c) {
    switch (next(c)) {
    case 'D': return dependent_conformance(c, SW_DependentProtocolConformanceRoot);
    case 'I': return dependent_conformance(c, SW_DependentProtocolConformanceInherited);
    case 'A': return dependent_conformance(c, SW_DependentProtocolConformanceAssociated);
    case 'P': return sw_with(c, SW_ProtocolConformanceRefInTypeModule, pop_protocol(c));
    case 'p': return sw_with(c, SW_ProtocolConformanceRefInProtocolModule, pop_protocol(c));
    case 'C': {
        int list = pop_any_conformance_list(c);
        int ref = pop_kind(c, SW_ProtocolConformanceRefInTypeModule);
        if (ref < 0) ref = pop_kind(c, SW_ProtocolConformanceRefInProtocolModule);
        if (ref < 0) {
            int mod = pop_module(c);
            int proto = pop_protocol(c);
            ref = sw_with2(c, SW_ProtocolConformanceRefInOtherModule, proto, mod);
        }
        int type = pop_kind(c, SW_Type);
        return with3(c, SW_ConcreteProtocolConformance, type, ref, list);
    }
    case 'r': return sw_with(c, SW_ProtocolDescriptorRecord, pop_protocol(c));
    case 'c': return sw_with(c, SW_ProtocolConformanceDescriptorRecord, pop_protocol_conformance(c));
    case 'n': return with_popped_type(c, SW_NominalTypeDescriptorRecord);
    case 'o': return sw_with(c, SW_OpaqueTypeDescriptorRecord, pop(c));
    case 'F': return sw_mk(c, SW_AccessibleFunctionRecord);
    default: return -1;
    }
}

/* ---- the operator loop ---- */

static int demangle_operator(sw_ctx *c) {
    int ch = next(c);
    switch (ch) {
    case 'A': return demangle_multi_substitutions(c);
    case 'B': return demangle_builtin_type(c);
    case 'C': return demangle_any_generic_type(c, SW_Class);
    case 'D': return sw_with(c, SW_TypeMangling, pop_kind(c, SW_Type));
    case 'E': return demangle_extension(c);
    case 'F': return demangle_plain_function(c);
    case 'G': return demangle_bound_generic_type(c);
    case 'H': return demangle_H(c);
    case 'I': return demangle_impl_function_type(c);
    case 'K': return sw_mk(c, SW_ThrowsAnnotation);
    case 'L': return demangle_local_identifier(c);
    case 'M': return demangle_metatype(c);
    case 'N': return with_popped_type(c, SW_TypeMetadata);
    case 'O': return demangle_any_generic_type(c, SW_Enum);
    case 'P': return demangle_any_generic_type(c, SW_Protocol);
    case 'Q': return demangle_archetype(c);
    case 'R': return demangle_generic_requirement(c);
    case 'S': return demangle_standard_substitution(c);
    case 'T': return demangle_thunk_or_specialization(c);
    case 'V': return demangle_any_generic_type(c, SW_Structure);
    case 'W': return demangle_witness(c);
    case 'X': return demangle_special_type(c);
    case 'Y': return demangle_type_annotation(c);
    case 'Z': return sw_with(c, SW_Static, pop_if(c, is_entity));
    case 'a': return demangle_any_generic_type(c, SW_TypeAlias);
    case 'c': return pop_function_type(c, SW_FunctionType);
    case 'd': return sw_mk(c, SW_VariadicMarker);
    case 'f': return demangle_function_entity(c);
    case 'g': return demangle_retroactive_conformance(c);
    case 'h': return type_of(c, sw_with(c, SW_Shared, pop_type_child(c)));
    case 'i': return demangle_subscript(c);
    case 'l': return demangle_generic_signature(c, 0);
    case 'm': return type_of(c, sw_with(c, SW_Metatype, pop_kind(c, SW_Type)));
    case 'n': return type_of(c, sw_with(c, SW_Owned, pop_type_child(c)));
    case 'o': return demangle_operator_identifier(c);
    case 'p': return type_of(c, demangle_protocol_list(c));
    case 'q': return type_of(c, demangle_generic_param_index(c));
    case 'r': return demangle_generic_signature(c, 1);
    case 's': return sw_mk_text(c, SW_Module, "Swift", 5);
    case 't': return pop_tuple(c);
    case 'u': {
        int sig = pop_kind(c, SW_DependentGenericSignature);
        int ty = pop_kind(c, SW_Type);
        return type_of(c, sw_with2(c, SW_DependentGenericType, sig, ty));
    }
    case 'v': return demangle_accessor(c, demangle_entity(c, SW_Variable));
    case 'x': return type_of(c, generic_param(c, 0, 0));
    case 'y': return sw_mk(c, SW_EmptyList);
    case 'z': return type_of(c, sw_with(c, SW_InOut, pop_type_child(c)));
    case '_': return sw_mk(c, SW_FirstElementMarker);
    case '.':
        push_back(c);
        {
            const char *t = c->s + c->pos;
            size_t n = c->n - c->pos;
            c->pos = c->n;
            return sw_mk_text(c, SW_Suffix, t, n);
        }
    case 'w': return -1; /* value witnesses belong to the old scheme only */
    default:
        push_back(c);
        return demangle_identifier(c);
    }
}

int sw_parse_new(sw_ctx *c) {
    while (c->pos < c->n) {
        int nd = demangle_operator(c);
        if (nd < 0 || c->fail) return -1;
        push(c, nd);
        if (c->fail) return -1;
    }
    int top = sw_mk(c, SW_Global);
    int parent = top;
    int attr;
    while ((attr = pop_if(c, is_function_attr)) >= 0) {
        sw_add(c, parent, attr);
        int k = sw_kind_of(c, attr);
        if (k == SW_PartialApplyForwarder || k == SW_PartialApplyObjCForwarder) parent = attr;
    }
    for (int i = 0; i < c->sp; i++) {
        int nd = c->stack[i];
        if (sw_kind_of(c, nd) == SW_Type) nd = sw_child(c, nd, 0);
        sw_add(c, parent, nd);
    }
    if (c->fail || top < 0 || nkids(c, top) == 0) return -1;
    return top;
}

static int fsig_kind(sw_ctx *c, int param, const char *t) {
    return sw_add(c, param, sw_mk_text(c, SW_FunctionSignatureSpecializationParamKind, t, strlen(t)));
}

/* An option set ("Dead and Owned To Guaranteed"). */
static int fsig_options(sw_ctx *c, int param, int e2g, int dead) {
    const char *parts[5];
    int np = 0;
    if (e2g) parts[np++] = "Existential To Protocol Constrained Generic";
    if (dead) parts[np++] = "Dead";
    if (next_if(c, 'G')) parts[np++] = "Owned To Guaranteed";
    if (next_if(c, 'O')) parts[np++] = "Guaranteed To Owned";
    if (next_if(c, 'X')) parts[np++] = "Exploded";
    char buf[160];
    size_t l = 0;
    for (int i = 0; i < np; i++) {
        if (i) memcpy(buf + l, " and ", 5), l += 5;
        size_t pl = strlen(parts[i]);
        memcpy(buf + l, parts[i], pl);
        l += pl;
    }
    const char *t = sw_pool_put(c, buf, l);
    return t ? sw_add(c, param, sw_mk_text(c, SW_FunctionSignatureSpecializationParamKind, t, l)) : -1;
}

static int fsig_param(sw_ctx *c, int kind) {
    int p = sw_mk(c, kind);
    switch (next(c)) {
    case 'n': return p;
    case 'c': return fsig_kind(c, p, "Closure Propagated");
    case 'p':
        switch (next(c)) {
        case 'f': return fsig_kind(c, p, "Constant Propagated Function");
        case 'g': return fsig_kind(c, p, "Constant Propagated Global");
        case 'k': return fsig_kind(c, p, "Constant Propagated KeyPath");
        case 'i': case 'd': {
            fsig_kind(c, p, c->s[c->pos - 1] == 'i' ? "Constant Propagated Integer" : "Constant Propagated Float");
            size_t st = c->pos;
            while (is_digit(peek(c))) next(c);
            if (c->pos == st) return -1;
            return sw_add(c, p, sw_mk_text(c, SW_FunctionSignatureSpecializationParamPayload, c->s + st, c->pos - st));
        }
        case 's': {
            const char *enc;
            switch (next(c)) {
            case 'b': enc = "u8"; break;
            case 'w': enc = "u16"; break;
            case 'c': enc = "objc"; break;
            default: return -1;
            }
            fsig_kind(c, p, "Constant Propagated String");
            return sw_add(c, p, sw_mk_text(c, SW_FunctionSignatureSpecializationParamPayload, enc, strlen(enc)));
        }
        default: return -1;
        }
    case 'e': return fsig_options(c, p, 1, next_if(c, 'D'));
    case 'd': return fsig_options(c, p, 0, 1);
    case 'g': push_back(c); return fsig_options(c, p, 0, 0);
    case 'o': push_back(c); return fsig_options(c, p, 0, 0);
    case 'x': push_back(c); return fsig_options(c, p, 0, 0);
    case 'i': return fsig_kind(c, p, "Value Promoted from Box");
    case 's': return fsig_kind(c, p, "Stack Promoted from Box");
    case 'r': return fsig_kind(c, p, "InOut Converted to Out");
    default: return -1;
    }
}

static int starts(const sw_ctx *c, int n, const char *s) {
    size_t l = strlen(s);
    return n >= 0 && c->nodes[n].tlen >= l && memcmp(c->nodes[n].text, s, l) == 0;
}

static int demangle_function_specialization(sw_ctx *c) {
    int spec = demangle_spec_attributes(c, SW_FunctionSignatureSpecialization);
    int guard = 0;
    while (spec >= 0 && !next_if(c, '_')) {
        if (++guard > 256) return -1;
        spec = sw_add(c, spec, fsig_param(c, SW_FunctionSignatureSpecializationParam));
    }
    if (!next_if(c, 'n')) spec = sw_add(c, spec, fsig_param(c, SW_FunctionSignatureSpecializationReturn));
    if (spec < 0) return -1;
    /* The payloads were mangled before the specialization: take them back, last first. */
    unsigned num = nkids(c, spec);
    for (unsigned i = 0; i < num; i++) {
        int param = sw_child(c, spec, num - i - 1);
        if (sw_kind_of(c, param) != SW_FunctionSignatureSpecializationParam || nkids(c, param) == 0) continue;
        int kind = sw_child(c, param, 0);
        int closure = starts(c, kind, "Closure"), keypath = starts(c, kind, "Constant Propagated KeyPath");
        int str = starts(c, kind, "Constant Propagated String");
        if (!closure && !keypath && !str && !starts(c, kind, "Constant Propagated Function") &&
            !starts(c, kind, "Constant Propagated Global"))
            continue;
        unsigned fixed = nkids(c, param);
        int ty;
        while ((ty = pop_kind(c, SW_Type)) >= 0) {
            if (!closure && !keypath) return -1;
            sw_add(c, param, ty);
        }
        int name = pop_kind(c, SW_Identifier);
        if (name < 0) return -1;
        const char *t = c->nodes[name].text;
        size_t l = c->nodes[name].tlen;
        if (str && l && t[0] == '_') t++, l--;
        sw_add(c, param, sw_mk_text(c, SW_FunctionSignatureSpecializationParamPayload, t, l));
        reverse_kids(c, param, fixed);
    }
    return spec;
}
