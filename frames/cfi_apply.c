/* SPDX-License-Identifier: MIT */
/* Applying a CFI row to a register file: the CFA, the saved registers, DWARF expressions. */
#include "frames/frames.h"

#pragma GCC poison malloc calloc realloc free

#define EXPR_BYTES_MAX 256u /* CFI expressions are a few bytes (glibc's longest: 9) */

static bool known(const fl_dwarf_regs_t *r, uint64_t reg) {
    return reg < FL_DWARF_REGS && (r->valid >> reg & 1);
}

/* Evaluates the expression at `at` (len bytes, read through `tables`) over the registers of the
 * frame, with `push` on the stack first if has_push. Memory is read through `stack`. */
static int eval(const fl_reader_t *tables, uint64_t at, uint16_t len, const fl_dwarf_regs_t *regs,
                const fl_reader_t *stack, bool has_push, uint64_t push, uint64_t *out) {
    uint8_t code[EXPR_BYTES_MAX];
    uint64_t st[FL_CFI_EXPR_STACK];
    unsigned n = 0, pc = 0;
    if (len > sizeof code) return FL_ENOSYS;
    if (fl_read(tables, at, code, len)) return FL_EFAULT;
    if (has_push) st[n++] = push;
/* Operands are read with bounds; `need` checks the stack depth an operation pops. */
#define NEED(k) do { if (n < (k)) return FL_EBADDATA; } while (0)
#define PUSH(v) do { uint64_t v_ = (v); if (n >= FL_CFI_EXPR_STACK) return FL_ERANGE; st[n++] = v_; } while (0)
    for (unsigned steps = 0; pc < len; steps++) {
        if (steps >= FL_CFI_EXPR_STEPS) return FL_ERANGE;
        uint8_t op = code[pc++];
        uint64_t a, b, v = 0;
        unsigned size = 0;
        bool sign = false;
        /* Immediate operands: fixed size, or LEB128. */
        switch (op) {
        case 0x03: case 0x0e: case 0x0f: size = 8; sign = op == 0x0f; break; /* addr, const8 */
        case 0x08: case 0x09: case 0x94: case 0x15: size = 1; sign = op == 0x09; break;
        case 0x0a: case 0x0b: case 0x28: case 0x2f: size = 2; sign = op != 0x0a; break;
        case 0x0c: case 0x0d: size = 4; sign = op == 0x0d; break;
        default: break;
        }
        if (size) {
            if (len - pc < size) return FL_EBADDATA;
            for (unsigned i = 0; i < size; i++) v |= (uint64_t)code[pc + i] << (8 * i);
            if (sign && size < 8 && (v >> (8 * size - 1) & 1)) v |= ~(uint64_t)0 << (8 * size);
            pc += size;
        }
        uint64_t leb[2] = {0, 0}; /* constu, consts, plus_uconst, breg*, regx, bregx */
        unsigned nleb = op == 0x10 || op == 0x11 || op == 0x23 || op == 0x90 || (op >= 0x70 && op <= 0x8f) ? 1
                        : op == 0x92 ? 2 : 0;
        for (unsigned k = 0; k < nleb; k++) {
            bool is_signed = op == 0x11 || (op >= 0x70 && op <= 0x8f) || (op == 0x92 && k == 1);
            unsigned shift = 0;
            uint8_t byte;
            do {
                if (pc >= len || shift >= 64) return FL_EBADDATA;
                byte = code[pc++];
                leb[k] |= (uint64_t)(byte & 0x7f) << shift;
                shift += 7;
            } while (byte & 0x80);
            if (is_signed && shift < 64 && (byte & 0x40)) leb[k] |= ~(uint64_t)0 << shift;
        }
        switch (op) {
        case 0x03: case 0x08: case 0x09: case 0x0a: case 0x0b: case 0x0c: case 0x0d: case 0x0e:
        case 0x0f: PUSH(v); break;
        case 0x10: case 0x11: PUSH(leb[0]); break;
        case 0x06: case 0x94: /* deref, deref_size */
            NEED(1);
            a = 0;
            size = op == 0x06 ? 8 : (unsigned)v;
            if (size == 0 || size > 8) return FL_EBADDATA;
            if (fl_read(stack, st[n - 1], &a, size)) return FL_EFAULT; /* little-endian */
            st[n - 1] = a;
            break;
        case 0x12: NEED(1); PUSH(st[n - 1]); break;             /* dup */
        case 0x13: NEED(1); n--; break;                          /* drop */
        case 0x14: NEED(2); PUSH(st[n - 2]); break;             /* over */
        case 0x15: if (v >= n) return FL_EBADDATA; PUSH(st[n - 1 - v]); break; /* pick */
        case 0x16: NEED(2); a = st[n - 1]; st[n - 1] = st[n - 2]; st[n - 2] = a; break;
        case 0x17: NEED(3); a = st[n - 1]; st[n - 1] = st[n - 2]; st[n - 2] = st[n - 3];
            st[n - 3] = a; break;                                /* rot */
        case 0x19: NEED(1); if ((int64_t)st[n - 1] < 0) st[n - 1] = -st[n - 1]; break;
        case 0x1f: NEED(1); st[n - 1] = -st[n - 1]; break;     /* neg */
        case 0x20: NEED(1); st[n - 1] = ~st[n - 1]; break;     /* not */
        case 0x23: NEED(1); st[n - 1] += leb[0]; break;         /* plus_uconst */
        case 0x1a: case 0x1b: case 0x1c: case 0x1d: case 0x1e: case 0x21: case 0x22: case 0x24:
        case 0x25: case 0x26: case 0x27: case 0x29: case 0x2a: case 0x2b: case 0x2c: case 0x2d:
        case 0x2e: /* binary: a = second from top, b = top */
            NEED(2);
            b = st[--n];
            a = st[n - 1];
            switch (op) {
            case 0x1a: v = a & b; break;
            case 0x1b: /* div, signed */
                if (b == 0) return FL_EBADDATA;
                v = ((int64_t)a == INT64_MIN && (int64_t)b == -1) ? a : (uint64_t)((int64_t)a / (int64_t)b);
                break;
            case 0x1c: v = a - b; break;
            case 0x1d: if (b == 0) return FL_EBADDATA; v = a % b; break;
            case 0x1e: v = a * b; break;
            case 0x21: v = a | b; break;
            case 0x22: v = a + b; break;
            case 0x24: v = b >= 64 ? 0 : a << b; break;
            case 0x25: v = b >= 64 ? 0 : a >> b; break;
            case 0x26: v = (uint64_t)((int64_t)a >> (b >= 64 ? 63 : b)); break;
            case 0x27: v = a ^ b; break;
            case 0x29: v = a == b; break;
            case 0x2a: v = (int64_t)a >= (int64_t)b; break;
            case 0x2b: v = (int64_t)a > (int64_t)b; break;
            case 0x2c: v = (int64_t)a <= (int64_t)b; break;
            case 0x2d: v = (int64_t)a < (int64_t)b; break;
            default: v = a != b; break;
            }
            st[n - 1] = v;
            break;
        case 0x28: /* bra */
            NEED(1);
            if (st[--n] == 0) break;
            /* fall through */
        case 0x2f: { /* skip */
            int64_t to = (int64_t)pc + (int64_t)v;
            if (to < 0 || to > (int64_t)len) return FL_EBADDATA;
            pc = (unsigned)to;
            break;
        }
        case 0x90: /* regx: the register's value (as libunwind evaluates it in CFI) */
            if (!known(regs, leb[0])) return leb[0] >= FL_DWARF_REGS ? FL_ENOSYS : FL_EINVAL;
            PUSH(regs->r[leb[0]]);
            break;
        case 0x92: /* bregx */
            if (!known(regs, leb[0])) return leb[0] >= FL_DWARF_REGS ? FL_ENOSYS : FL_EINVAL;
            PUSH(regs->r[leb[0]] + leb[1]);
            break;
        case 0x96: break; /* nop */
        default:
            if (op >= 0x30 && op <= 0x4f) { /* lit0..31 */
                PUSH(op - 0x30u);
            } else if (op >= 0x50 && op <= 0x6f) { /* reg0..31 */
                if (!known(regs, op - 0x50u)) return FL_EINVAL;
                PUSH(regs->r[op - 0x50u]);
            } else if (op >= 0x70 && op <= 0x8f) { /* breg0..31 */
                if (!known(regs, op - 0x70u)) return FL_EINVAL;
                PUSH(regs->r[op - 0x70u] + leb[0]);
            } else {
                return FL_ENOSYS; /* not used by CFI (TLS, typed, entry values...) */
            }
            break;
        }
    }
#undef NEED
#undef PUSH
    if (!n) return FL_EBADDATA;
    *out = st[n - 1];
    return 0;
}

/* The DWARF numbers of sp and pc (FL_DWARF_REGS for an unknown architecture). */
static void arch_regs(int arch, unsigned *sp, unsigned *pc) {
    *sp = arch == FL_REGS_ARCH_X86_64 ? 7 : arch == FL_REGS_ARCH_ARM64 ? 31 : FL_DWARF_REGS;
    *pc = arch == FL_REGS_ARCH_X86_64 ? 16 : arch == FL_REGS_ARCH_ARM64 ? 32 : FL_DWARF_REGS;
}

int fl_cfi_row_apply(const fl_cfi_row_t *row, int arch, const fl_reader_t *stack,
                     const fl_reader_t *tables, fl_dwarf_regs_t *regs) {
    unsigned sp_reg, pc_reg, n = row->h.nrules;
    arch_regs(arch, &sp_reg, &pc_reg);
    if (sp_reg >= FL_DWARF_REGS) return FL_EINVAL;
    if ((row->h.cfa_kind == FL_CFI_CFA_REG && row->h.cfa_reg >= FL_DWARF_REGS) ||
        row->h.ra_reg >= FL_DWARF_REGS || n > FL_DWARF_REGS)
        return FL_EBADDATA;
    uint64_t cfa, val[FL_DWARF_REGS];
    int e;
    if (row->h.cfa_kind == FL_CFI_CFA_REG) {
        if (!known(regs, row->h.cfa_reg)) return FL_EINVAL;
        cfa = regs->r[row->h.cfa_reg] + (uint64_t)row->h.cfa_offset;
    } else if ((e = eval(tables, row->h.expr_base + (uint64_t)row->h.cfa_offset, row->h.cfa_len, regs,
                         stack, false, 0, &cfa))) {
        return e;
    }
    /* Every value first, from the callee's registers; then the writes. */
    for (unsigned i = 0; i < n; i++) {
        const fl_cfi_rule_t *u = &row->rule[i];
        uint64_t v = 0;
        if (u->reg >= FL_DWARF_REGS) return FL_EBADDATA;
        switch (u->kind) {
        case FL_CFI_RULE_UNDEFINED:
            if (u->reg == row->h.ra_reg) return 0; /* the outermost frame */
            break;
        case FL_CFI_RULE_SAME: v = regs->r[u->reg]; break;
        case FL_CFI_RULE_OFFSET:
            if (fl_read_u64(stack, cfa + (uint64_t)(int64_t)u->value, &v)) return FL_EFAULT;
            break;
        case FL_CFI_RULE_VAL_OFFSET: v = cfa + (uint64_t)(int64_t)u->value; break;
        case FL_CFI_RULE_REGISTER:
            if (!known(regs, (unsigned)u->value)) return FL_EINVAL;
            v = regs->r[u->value];
            break;
        case FL_CFI_RULE_EXPR:
        case FL_CFI_RULE_VAL_EXPR:
            e = eval(tables, row->h.expr_base + (uint64_t)(int64_t)u->value, u->len, regs, stack,
                     true, cfa, &v);
            if (e) return e;
            if (u->kind == FL_CFI_RULE_EXPR && fl_read_u64(stack, v, &v)) return FL_EFAULT;
            break;
        default: return FL_EBADDATA;
        }
        val[i] = v;
    }
    /* The return address: the RA column's rule, else still in its register. */
    uint64_t ra = regs->r[row->h.ra_reg];
    bool have_ra = known(regs, row->h.ra_reg);
    for (unsigned i = 0; i < n; i++) {
        if (row->rule[i].reg == row->h.ra_reg && row->rule[i].kind != FL_CFI_RULE_SAME) {
            ra = val[i];
            have_ra = true;
        }
    }
    if (!have_ra) return FL_EINVAL;
    if (ra == 0) return 0; /* libunwind's convention for the outermost frame */
    regs->r[sp_reg] = cfa; /* unless a rule for sp says otherwise (signal frames) */
    regs->valid |= 1ull << sp_reg;
    for (unsigned i = 0; i < n; i++) {
        const fl_cfi_rule_t *u = &row->rule[i];
        if (u->kind == FL_CFI_RULE_UNDEFINED) {
            regs->valid &= ~(1ull << u->reg);
        } else if (u->kind != FL_CFI_RULE_SAME) {
            regs->r[u->reg] = val[i];
            regs->valid |= 1ull << u->reg;
        }
    }
    if (pc_reg < FL_DWARF_REGS) {
        regs->r[pc_reg] = ra;
        regs->valid |= 1ull << pc_reg;
    }
    return 1;
}
