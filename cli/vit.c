/* vit - command-line front end of vit.h.

     vit info        MODEL [LOAD]
     vit run         MODEL INPUT.npy OUTPUT.npy [--features | --tokens] [--threads N] [LOAD]
     vit classify    MODEL IMAGE... [--top K] [PREP] [--threads N] [LOAD]
     vit maps        MODEL IMAGE... --out DIR [--layer L] [--fusion mean|max|min] [--discard R] [PREP]
                    [--threads N] [LOAD]
     vit maps        MODEL IMAGE... --out DIR --method M [--class K|NAME]... [--top K] [--target FILE.npy]
                    [--npy] [--pairing own|vit-explain] [--steps N] [--discard R] [PREP] [--threads N] [LOAD]
     vit input-shape MODEL [B [N [W]]] [LOAD]
     vit version          (also --version)
     vit help [COMMAND]   (also --help anywhere: COMMAND's usage after a command)
   LOAD: [--heads N] [--config config.json] [--labels FILE] [--image-size N]
   PREP: [--mean M] [--std S] [--resize N]

   `run` works for every kind tools/export.py writes (whole ViTs and single
   modules): float32 .npy in, float32 .npy out. This contract is stable.
   MODEL may also be a ViT checkpoint from timm, Hugging Face transformers
   or torchvision without vit.h metadata: a config.json beside it is read,
   or give --config, or --heads for a width that is not a standard one.
   `classify` and `maps` prepare images as the file asks
   (vit_model_preprocess: its mean, std, resize, crop, filter, else
   torchvision's ViT transform); --mean, --std and --resize override. Each
   image gets an arena sized for it by a counting pass.
   `maps` writes, per image, DIR/<name>_heads.png (the class token's
   attention in each head of one layer), <name>_fused.png (those heads
   fused) and <name>_rollout.png (attention rollout through every layer).
   With --method (rollout, grad-rollout, chefer, legrad, gradcam,
   saliency, gxi, ig) it draws instead, per image and class, the map that
   method gives from a reverse pass (vit_explain) as
   DIR/<name>_<method>_<class>.png, and with --npy the raw map beside it;
   the classes are --class (a number or a label; repeats), else the --top
   K likeliest, else the likeliest; a model without a head takes --target,
   a direction over its outputs.
   --image-size runs a ViT at another input size: its position embedding
   is resized as the library the file came from does it (torchvision,
   timm or transformers; vit_model_set_image_size).
   A command that makes fewer than 16 passes through the model (images,
   and with --method the classes and ig's steps) loads its weights as the
   file lays them out (vit_load_opts.keep_layout): packing them for the
   products would cost the load more than the passes gain.

   Every usage error names the argument and what is wrong with it and exits
   2; a failure while running exits 1 with vit.h's message. Text from files
   (labels, names in messages) is printed with control characters escaped.
   Define VIT_CLI_NO_MAIN to include this file for its parser alone
   (fuzz/fuzz_cli.c). */
#define VIT_IMPLEMENTATION
#include "vit.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#if defined(_WIN32)
#include <direct.h>
#define cli_mkdir(path) _mkdir(path)
#else
#define cli_mkdir(path) mkdir(path, 0777)
#endif

/* ---- arguments: the commands and options, as tables ---- */

enum { C_INFO = 1, C_RUN = 2, C_CLASSIFY = 4, C_MAPS = 8, C_SHAPE = 16, C_VERSION = 32, C_HELP = 64 };
#define C_LOAD (C_INFO | C_RUN | C_CLASSIFY | C_MAPS | C_SHAPE)
#define C_IMAGE (C_CLASSIFY | C_MAPS)
#define CLI_MAX_POS 4096 /* positional arguments: at most this many images */
#define CLI_IG_STEPS 16  /* maps --method ig: the steps without --steps */

typedef struct cli_command {
    const char *name;
    int bit;            /* C_* */
    int min_pos;        /* positional arguments it needs */
    int max_pos;        /* and takes */
    const char *args;   /* their names, space-separated; "IMAGE..." repeats */
    const char *help;
} cli_command;

static const cli_command cli_commands[] = {
    {"info", C_INFO, 1, 1, "MODEL", "what the file holds: kind, sizes, labels, how its config was found"},
    {"run", C_RUN, 3, 3, "MODEL INPUT.npy OUTPUT.npy",
     "the model on a float32 .npy, the output saved as .npy (any kind)"},
    {"classify", C_CLASSIFY, 2, CLI_MAX_POS, "MODEL IMAGE...",
     "the top classes of each image, with the model's labels"},
    {"maps", C_MAPS, 2, CLI_MAX_POS, "MODEL IMAGE...",
     "attention PNGs of each image: every head, the heads fused, rollout; with --method, a class's map"},
    {"input-shape", C_SHAPE, 1, 4, "MODEL [B [N [W]]]",
     "the input shape for B items (N tokens or height, W width where the kind leaves them free)"},
    {"version", C_VERSION, 0, 0, "", "the version of vit.h"},
    {"help", C_HELP, 0, 1, "[COMMAND]", "the usage of every command, or of COMMAND"},
};
#define CLI_N_COMMANDS (int)(sizeof cli_commands / sizeof cli_commands[0])

/* The formats vit_image_load reads: the usage and README.md say this, and
   tests/cli.sh holds both to what the loader accepts. */
#define CLI_IMAGE_FORMATS "PNG, JPEG, BMP or PNM (binary PPM/PGM)"

enum { T_FLAG, T_INT, T_REAL, T_LIST, T_TEXT, T_CHOICE };

/* id, name, type, commands, bounds (T_INT: lo..hi; T_REAL: [lo, hi)),
   value (T_CHOICE: the choices, |-separated), help. */
#define CLI_OPTIONS(X)                                                                                                 \
    X(HEADS, "--heads", T_INT, C_LOAD, 1, 65536, "N", "attention heads of a checkpoint without vit.h metadata")        \
    X(CONFIG, "--config", T_TEXT, C_LOAD, 0, 0, "FILE",                                                                \
      "its timm or transformers config.json (default: the one beside it)")                                             \
    X(LABELS, "--labels", T_TEXT, C_LOAD, 0, 0, "FILE", "class names, one a line")                                     \
    X(IMAGE_SIZE, "--image-size", T_INT, C_LOAD, 1, 8192, "N",                                                         \
      "run a ViT at N x N pixels, its position embedding resized")                                                     \
    X(FEATURES, "--features", T_FLAG, C_RUN, 0, 0, "", "a ViT's pre-head representation instead of its logits")        \
    X(TOKENS, "--tokens", T_FLAG, C_RUN, 0, 0, "", "a ViT's every token after the final norm, (B, T, C)")              \
    X(THREADS, "--threads", T_INT, C_RUN | C_IMAGE, 1, VIT_MAX_THREADS, "N",                                           \
      "threads (default: OMP_NUM_THREADS, else one per core)")                                                         \
    X(TOP, "--top", T_INT, C_CLASSIFY | C_MAPS, 1, INT_MAX, "K",                                                       \
      "classify: how many classes to print (default 5); maps --method: explain the K likeliest")                       \
    X(MEAN, "--mean", T_LIST, C_IMAGE, 0, 0, "M", "per-channel mean: one number, or one per channel (A,B,C)")          \
    X(STD, "--std", T_LIST, C_IMAGE, 0, 0, "S", "per-channel std, positive: one number, or one per channel")           \
    X(RESIZE, "--resize", T_INT, C_IMAGE, 1, 65536, "N",                                                               \
      "short side before the centre crop, at least the model's size")                                                  \
    X(OUT, "--out", T_TEXT, C_MAPS, 0, 0, "DIR", "folder for the PNGs (made if missing)")                              \
    X(LAYER, "--layer", T_INT, C_MAPS, 0, 65535, "L", "the layer whose heads are drawn (default: the last)")           \
    X(FUSION, "--fusion", T_CHOICE, C_MAPS, 0, 0, "mean|max|min", "how heads are fused (default mean)")                \
    X(DISCARD, "--discard", T_REAL, C_MAPS, 0, 1, "R",                                                                 \
      "rollout: fraction of the lowest weights dropped, in [0, 1) (default 0.9)")                                      \
    X(METHOD, "--method", T_CHOICE, C_MAPS, 0, 0, "rollout|grad-rollout|chefer|legrad|gradcam|saliency|gxi|ig",       \
      "a class's map from a reverse pass (vit_explain) instead of the attention PNGs")                                 \
    X(CLASS, "--class", T_TEXT, C_MAPS, 0, 0, "K|NAME",                                                                \
      "--method: the class to explain, by number or label (repeats)")                                                  \
    X(TARGET, "--target", T_TEXT, C_MAPS, 0, 0, "FILE.npy",                                                            \
      "--method: the direction to explain, one weight per output (a model without classes)")                           \
    X(NPY, "--npy", T_FLAG, C_MAPS, 0, 0, "", "--method: also each raw map as .npy (G x G, or H x W for pixels)")      \
    X(PAIRING, "--pairing", T_CHOICE, C_MAPS, 0, 0, "own|vit-explain",                                                 \
      "grad-rollout: each layer with its own gradient (default), or vit-explain's reversed pairing")                   \
    X(STEPS, "--steps", T_INT, C_MAPS, 1, 4096, "N", "ig: steps along the path from black (default 16)")

#define CLI_ENUM(id, name, type, cmds, lo, hi, value, help) O_##id,
enum { CLI_OPTIONS(CLI_ENUM) O_COUNT };

typedef struct cli_option {
    const char *name;
    int type;           /* T_* */
    int cmds;           /* C_* bits of the commands that take it */
    double lo, hi;      /* bounds of T_INT (closed) and T_REAL (half-open) */
    const char *value;  /* the value's name in the usage */
    const char *help;
} cli_option;

#define CLI_ROW(id, name, type, cmds, lo, hi, value, help) {name, type, cmds, lo, hi, value, help},
static const cli_option cli_options[O_COUNT] = {CLI_OPTIONS(CLI_ROW)};

typedef struct cli_args {
    const cli_command *cmd;       /* NULL until known; CLI_HELP: the command whose usage to print, NULL for all */
    const char *pos[CLI_MAX_POS]; /* positional arguments after the command */
    int npos;
    int given[O_COUNT];           /* 1: the option was given */
    const char *text[O_COUNT];    /* its value as typed */
    long num[O_COUNT];            /* T_INT, T_CHOICE (the choice's index) */
    double real[O_COUNT];         /* T_REAL */
    float list[O_COUNT][3];       /* T_LIST: 1 to 3 numbers */
    int nlist[O_COUNT];
    long num_pos[4];              /* input-shape: B, N, W as numbers (index 1..3) */
    const char *classes[64];      /* maps --class, each as typed (the one option that repeats) */
    int nclasses;
    char err[8192];               /* a usage error: which argument, what is wrong */
} cli_args;

enum { CLI_OK = 0, CLI_ERROR = 2, CLI_HELP = 3, CLI_VERSION = 4 };

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static int cli_fail(cli_args *a, const char *fmt, ...) {
    va_list ap;
    size_t n = (size_t)snprintf(a->err, sizeof a->err, "vit%s%s: ", a->cmd ? " " : "", a->cmd ? a->cmd->name : "");
    va_start(ap, fmt);
    vsnprintf(a->err + n, sizeof a->err - n, fmt, ap);
    va_end(ap);
    return CLI_ERROR;
}

/* The commands that take option o, for messages: "classify, maps". */
static const char *cli_takers(int o, char *buf, size_t n) {
    int c;
    size_t len = 0;
    buf[0] = 0;
    for (c = 0; c < CLI_N_COMMANDS; c++)
        if (cli_options[o].cmds & cli_commands[c].bit)
            len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s%s", len ? ", " : "", cli_commands[c].name);
    return buf;
}

/* Every command's name, for messages: "info, run, ... or help". */
static const char *cli_command_names(char *buf, size_t n) {
    int c;
    size_t len = 0;
    buf[0] = 0;
    for (c = 0; c < CLI_N_COMMANDS && len < n; c++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", c == 0 ? "" : c + 1 < CLI_N_COMMANDS ? ", " : " or ",
                                cli_commands[c].name);
    return buf;
}

static const cli_command *cli_find_command(const char *name) {
    int c;
    for (c = 0; c < CLI_N_COMMANDS; c++)
        if (!strcmp(name, cli_commands[c].name)) return &cli_commands[c];
    return NULL;
}

/* The options a command takes, for messages: "--top, --mean, ...". */
static const char *cli_options_of(const cli_command *cmd, char *buf, size_t n) {
    int o;
    size_t len = 0;
    buf[0] = 0;
    for (o = 0; o < O_COUNT && len < n; o++)
        if (cli_options[o].cmds & cmd->bit)
            len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? ", " : "", cli_options[o].name);
    return buf;
}

/* "0.5" or "0.485,0.456,0.406": 1 to 3 finite numbers. */
static int cli_list(const char *s, float v[3], int *n) {
    *n = 0;
    for (;;) {
        char *end;
        double d = strtod(s, &end);
        if (end == s || *n == 3 || !isfinite(d) || fabs(d) > 1e30) return 0;
        v[(*n)++] = (float)d;
        if (!*end) return 1;
        if (*end != ',') return 0;
        s = end + 1;
    }
}

/* Checks and stores the value of option o. */
static int cli_value(cli_args *a, int o, const char *v) {
    const cli_option *op = &cli_options[o];
    char *end;
    int i;
    a->text[o] = v;
    switch (op->type) {
    case T_INT: {
        long n;
        errno = 0;
        n = strtol(v, &end, 10);
        if (end == v || *end) return cli_fail(a, "%s '%s': not a whole number", op->name, v);
        if (errno == ERANGE || n < op->lo || n > op->hi)
            return cli_fail(a, "%s %s: out of range, %s must be in %.0f..%.0f", op->name, v, op->value, op->lo, op->hi);
        a->num[o] = n;
        return CLI_OK;
    }
    case T_REAL: {
        double d = strtod(v, &end);
        if (end == v || *end || !isfinite(d)) return cli_fail(a, "%s '%s': not a number", op->name, v);
        if (d < op->lo || d >= op->hi)
            return cli_fail(a, "%s %s: out of range, %s must be in [%g, %g)", op->name, v, op->value, op->lo, op->hi);
        a->real[o] = d;
        return CLI_OK;
    }
    case T_LIST:
        if (!cli_list(v, a->list[o], &a->nlist[o]))
            return cli_fail(a, "%s '%s': expected 1 to 3 numbers separated by commas (one per channel)", op->name, v);
        for (i = 0; o == O_STD && i < a->nlist[o]; i++)
            if (!(a->list[o][i] > 0.0f))
                return cli_fail(a, "%s %s: a standard deviation must be positive", op->name, v);
        return CLI_OK;
    case T_CHOICE: {
        const char *c = op->value;
        size_t len = strlen(v);
        for (i = 0; c; i++) {
            const char *bar = strchr(c, '|');
            size_t clen = bar ? (size_t)(bar - c) : strlen(c);
            if (clen == len && !strncmp(c, v, len)) {
                a->num[o] = i;
                return CLI_OK;
            }
            c = bar ? bar + 1 : NULL;
        }
        return cli_fail(a, "%s '%s': expected one of %s", op->name, v, op->value);
    }
    default: return CLI_OK; /* T_TEXT */
    }
}

/* argv into a; no I/O, no exit. CLI_OK, CLI_HELP, CLI_VERSION, or
   CLI_ERROR with the reason in a->err. */
static int cli_parse(int argc, char **argv, cli_args *a) {
    int i, o, options_done = 0;
    char list[512], names[256];
    memset(a, 0, sizeof *a);
    cli_command_names(names, sizeof names);
    for (i = 1; i < argc; i++) /* --help and --version win wherever they are (before a --) */
        if (!strcmp(argv[i], "--")) break;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            a->cmd = argc > 1 ? cli_find_command(argv[1]) : NULL; /* vit CMD ... --help: CMD's usage */
            return CLI_HELP;
        } else if (!strcmp(argv[i], "--version")) return CLI_VERSION;
    if (argc < 2) return cli_fail(a, "no command given (%s)", names);
    a->cmd = cli_find_command(argv[1]);
    if (!a->cmd) {
        if (argv[1][0] == '-') return cli_fail(a, "expected a command before '%s' (%s)", argv[1], names);
        return cli_fail(a, "unknown command '%s' (%s)", argv[1], names);
    }
    if (a->cmd->bit == C_HELP) { /* vit help [COMMAND] */
        if (argc > 3) return cli_fail(a, "unexpected argument '%s' (help takes [COMMAND])", argv[3]);
        if (argc < 3) {
            a->cmd = NULL;
            return CLI_HELP;
        }
        if (!(a->cmd = cli_find_command(argv[2]))) return cli_fail(a, "unknown command '%s' (%s)", argv[2], names);
        return CLI_HELP;
    }
    if (a->cmd->bit == C_VERSION && argc > 2)
        return cli_fail(a, "unexpected argument '%s' (version takes none)", argv[2]);
    for (i = 2; i < argc; i++) {
        const char *arg = argv[i], *eq, *value;
        size_t len;
        if (options_done || arg[0] != '-' || !arg[1]) {
            if (a->npos == CLI_MAX_POS)
                return cli_fail(a, "too many images at '%s' (at most %d)", arg, CLI_MAX_POS - 1);
            if (a->npos == a->cmd->max_pos)
                return cli_fail(a, "unexpected argument '%s' (%s takes %s)", arg, a->cmd->name, a->cmd->args);
            a->pos[a->npos++] = arg;
            continue;
        }
        if (!strcmp(arg, "--")) {
            options_done = 1;
            continue;
        }
        eq = strchr(arg, '=');
        len = eq ? (size_t)(eq - arg) : strlen(arg);
        for (o = 0; o < O_COUNT; o++)
            if (strlen(cli_options[o].name) == len && !strncmp(cli_options[o].name, arg, len)) break;
        if (o == O_COUNT)
            return cli_fail(a, "unknown option '%.*s' (%s takes %s)", (int)len, arg, a->cmd->name,
                            cli_options_of(a->cmd, list, sizeof list));
        if (!(cli_options[o].cmds & a->cmd->bit))
            return cli_fail(a, "%s is not an option of %s (it is for %s)", cli_options[o].name, a->cmd->name,
                            cli_takers(o, list, sizeof list));
        if (a->given[o] && o != O_CLASS) return cli_fail(a, "%s given twice", cli_options[o].name);
        if (o == O_CLASS && a->nclasses == 64) return cli_fail(a, "--class given more than 64 times");
        a->given[o] = 1;
        if (cli_options[o].type == T_FLAG) {
            if (eq) return cli_fail(a, "%s takes no value (got '%s')", cli_options[o].name, eq + 1);
            continue;
        }
        if (eq) value = eq + 1;
        else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2)) value = argv[++i];
        else
            return cli_fail(a, "%s needs a value (%s)%s%s", cli_options[o].name, cli_options[o].value,
                            i + 1 < argc ? ", got the option " : "", i + 1 < argc ? argv[i + 1] : "");
        if (cli_value(a, o, value) != CLI_OK) return CLI_ERROR;
        if (o == O_CLASS) a->classes[a->nclasses++] = value;
    }
    if (a->npos < a->cmd->min_pos) {
        /* Name the first missing argument: the npos-th word of args. */
        const char *w = a->cmd->args;
        size_t len;
        int k;
        for (k = 0; k < a->npos && strchr(w, ' '); k++) w = strchr(w, ' ') + 1;
        len = strcspn(w, " .");
        if (!strncmp(w + len, ".npy", 4)) len += 4;
        return cli_fail(a, "missing %.*s (usage: vit %s %s)", (int)len, w, a->cmd->name, a->cmd->args);
    }
    if (a->cmd->bit == C_MAPS && !a->given[O_OUT]) return cli_fail(a, "missing --out DIR (the folder for the PNGs)");
    if (a->given[O_FEATURES] && a->given[O_TOKENS]) return cli_fail(a, "--features and --tokens: one or the other");
    for (o = 0; o < O_COUNT; o++) /* the reverse pass's options need --method */
        if (a->given[o] && !a->given[O_METHOD] &&
            (o == O_CLASS || o == O_TARGET || o == O_NPY || o == O_PAIRING || o == O_STEPS ||
             (o == O_TOP && a->cmd->bit == C_MAPS)))
            return cli_fail(a, "%s: only with --method (a class's map)", cli_options[o].name);
    if (a->given[O_METHOD] && (a->given[O_LAYER] || a->given[O_FUSION]))
        return cli_fail(a, "%s: not with --method (it draws the attention PNGs)",
                        a->given[O_LAYER] ? "--layer" : "--fusion");
    if (a->given[O_TARGET] && (a->given[O_CLASS] || a->given[O_TOP]))
        return cli_fail(a, "--target and %s: a direction or classes, not both",
                        a->given[O_CLASS] ? "--class" : "--top");
    for (i = 1; a->cmd->bit == C_SHAPE && i < a->npos; i++) { /* B, N, W: sizes */
        char *end;
        long v;
        errno = 0;
        v = strtol(a->pos[i], &end, 10);
        if (end == a->pos[i] || *end || errno == ERANGE || v < 1 || v > INT32_MAX)
            return cli_fail(a, "%s '%s': not a size in 1..%ld",
                            i == 1   ? "B"
                            : i == 2 ? "N"
                                     : "W",
                            a->pos[i], (long)INT32_MAX);
        a->num_pos[i] = v;
    }
    return CLI_OK;
}

/* ---- printing text from files ---- */

/* Bytes of the valid UTF-8 character at p that a terminal only displays,
   or 0: C0 and C1 controls, DEL, overlong forms, surrogates, stray bytes. */
static int cli_printable(const unsigned char *p) {
    unsigned cp;
    int n, i;
    if (p[0] < 0x80) return p[0] >= 0x20 && p[0] != 0x7f;
    n = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3 : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
    cp = n == 2 ? p[0] & 0x1fu : n == 3 ? p[0] & 0x0fu : p[0] & 0x07u;
    for (i = 1; i < n; i++) { /* stops at the terminating NUL, which is no continuation byte */
        if ((p[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (p[i] & 0x3fu);
    }
    if (!n || (n == 2 && cp < 0xa0) || (n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return n;
}

/* s with every byte that is not displayable text written as \xHH, into
   out (cap bytes, always terminated when cap > 0); returns the length the
   whole escaped text needs, as snprintf does. */
static size_t cli_escape(char *out, size_t cap, const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    size_t len = 0;
    while (*p) {
        int n = cli_printable(p), k;
        char hex[5];
        if (n) {
            for (k = 0; k < n; k++, len++)
                if (len + 1 < cap) out[len] = (char)p[k];
            p += n;
            continue;
        }
        snprintf(hex, sizeof hex, "\\x%02x", *p++);
        for (k = 0; k < 4; k++, len++)
            if (len + 1 < cap) out[len] = hex[k];
    }
    if (cap) out[len < cap ? len : cap - 1] = 0;
    return len;
}

#ifndef VIT_CLI_NO_MAIN

/* cli_escape into one of a few rotating buffers: for printf arguments. */
static const char *esc(const char *s) {
    static char bufs[4][4 * 4096 + 64]; /* a path as long as PATH_MAX, every byte escaped */
    static int next;
    char *b = bufs[next++ & 3];
    if (!s) return "(null)";
    cli_escape(b, sizeof bufs[0], s);
    return b;
}

/* "  vit maps MODEL IMAGE... --out DIR [--layer L] ... [LOAD]" and its help line. */
static void cli_usage_command(FILE *f, const cli_command *cmd) {
    char line[512];
    int o;
    size_t len = (size_t)snprintf(line, sizeof line, "  vit %s%s%s", cmd->name, *cmd->args ? " " : "", cmd->args);
    for (o = 0; o < O_COUNT; o++) /* maps' --out is not optional */
        if ((cli_options[o].cmds & cmd->bit) && cli_options[o].cmds != C_LOAD && len < sizeof line)
            len += (size_t)snprintf(line + len, sizeof line - len, o == O_OUT ? " %s%s%s" : " [%s%s%s]",
                                    cli_options[o].name, cli_options[o].type == T_FLAG ? "" : " ",
                                    cli_options[o].value);
    if (cmd->bit & C_LOAD) snprintf(line + len, len < sizeof line ? sizeof line - len : 0, " [LOAD]");
    fprintf(f, "%s\n      %s\n", line, cmd->help);
}

/* The options of the commands in `cmds` (C_* bits). */
static void cli_usage_options(FILE *f, int cmds) {
    int o;
    for (o = 0; o < O_COUNT; o++) {
        char name[128], takers[128];
        if (!(cli_options[o].cmds & cmds)) continue;
        snprintf(name, sizeof name, "%s%s%s", cli_options[o].name, cli_options[o].type == T_FLAG ? "" : " ",
                 cli_options[o].value);
        fprintf(f, "  %-22s %s (%s)\n", name, cli_options[o].help,
                cli_options[o].cmds == C_LOAD ? "LOAD: every command that reads a model"
                                              : cli_takers(o, takers, sizeof takers));
    }
}

static void cli_usage_notes(FILE *f, int cmds) {
    fprintf(f, "\n");
    if (cmds & C_LOAD)
        fprintf(f, "MODEL: a .safetensors file from tools/export.py, or a timm, transformers or torchvision ViT "
                   "checkpoint.\n");
    if (cmds & C_IMAGE) fprintf(f, "IMAGE: " CLI_IMAGE_FORMATS ".\n");
    fprintf(f, "Usage errors exit 2, failures 1.\n");
}

/* The whole usage (cmd NULL), or one command's: `vit CMD --help`, `vit help CMD`. */
static void cli_usage(FILE *f, const cli_command *cmd) {
    int c;
    if (cmd) {
        fprintf(f, "usage:\n");
        cli_usage_command(f, cmd);
        if (cmd->bit & C_LOAD) {
            fprintf(f, "\noptions:\n");
            cli_usage_options(f, cmd->bit);
        }
        cli_usage_notes(f, cmd->bit);
        if (cmd->bit & C_LOAD) fprintf(f, "'vit help' lists every command.\n");
        return;
    }
    fprintf(f, "vit.h %s: run Vision Transformers and attention modules.\n\nusage:\n", vit_version());
    for (c = 0; c < CLI_N_COMMANDS; c++) cli_usage_command(f, &cli_commands[c]);
    fprintf(f, "\noptions:\n");
    cli_usage_options(f, C_LOAD);
    cli_usage_notes(f, C_LOAD | C_IMAGE);
    fprintf(f, "'vit help COMMAND' (or 'vit COMMAND --help'): one command's usage.\n");
}

/* vit.h's message alone: it names the file and says what failed, so
   neither the file nor the code's name (vit_result_string) is repeated. */
static int fail(vit_result r) {
    const char *msg = vit_last_error();
    fprintf(stderr, "vit: %s\n", msg && *msg ? esc(msg) : vit_result_string(r));
    return 1;
}

/* A usage problem found once the model is known: exit 2. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static int usage_fail(const cli_args *a, const char *fmt, ...) {
    char msg[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "vit %s: %s\nrun 'vit help %s' for the usage\n", a->cmd->name, esc(msg), a->cmd->name);
    return 2;
}

/* ---- the model ---- */

static char *label_buf; /* the escaped labels, freed by unload_model */

/* The passes through the model a command makes: a forward per image (run: one), and with maps --method a pass per
   class explained (ig: --steps of them), each with its reverse pass. */
static double model_passes(const cli_args *a) {
    double images = a->cmd->bit & C_IMAGE ? a->npos - 1 : a->cmd->bit == C_RUN ? 1 : 0, classes;
    if (a->cmd->bit != C_MAPS || !a->given[O_METHOD]) return images;
    classes = a->nclasses ? a->nclasses : a->given[O_TOP] ? (double)a->num[O_TOP] : 1;
    return images * (1 + classes * ((vit_method)a->num[O_METHOD] == VIT_METHOD_IG
                                         ? (a->given[O_STEPS] ? (double)a->num[O_STEPS] : CLI_IG_STEPS)
                                         : 1));
}

/* Packing a file's dense weights for the products at load (vit.h's default) pays only over many passes: on
   ViT-B/16 (Zen 4, two threads) an F32 load takes 0.20 s packed, 0.04 s not, for a forward 9% faster: about 16
   forwards' gain, BF16 and I8 alike. A command making fewer keeps the file's layout, the same outputs: classify
   of one image 0.41 -> 0.25 s F32, 0.22 -> 0.15 s BF16, 0.14 -> 0.10 s I8. */
#define CLI_PACK_PASSES 16

/* vit_model_load_file_ex with the LOAD options, then --image-size; the
   labels escaped once for every command that prints them. */
static vit_result load_model(vit_model *m, const cli_args *a) {
    vit_load_opts o;
    vit_result r;
    size_t bytes, k;
    memset(&o, 0, sizeof o);
    o.heads = a->given[O_HEADS] ? (int32_t)a->num[O_HEADS] : 0;
    o.config_path = a->text[O_CONFIG];
    o.labels_path = a->text[O_LABELS];
    o.keep_layout = model_passes(a) < CLI_PACK_PASSES;
    if ((r = vit_model_load_file_ex(m, a->pos[0], &o)) != VIT_OK) return r;
    if (a->given[O_IMAGE_SIZE] && (r = vit_model_set_image_size(m, (int32_t)a->num[O_IMAGE_SIZE])) != VIT_OK) {
        vit_model_free(m);
        return r;
    }
    if (!m->n_labels) return VIT_OK;
    bytes = (size_t)m->n_labels * sizeof(char *);
    for (k = 0; k < (size_t)m->n_labels; k++) bytes += cli_escape(NULL, 0, m->labels[k]) + 1;
    if (!(label_buf = (char *)malloc(bytes))) {
        vit_model_free(m);
        return VIT_ERR_OOM;
    }
    {
        const char **safe = (const char **)(void *)label_buf;
        char *text = label_buf + (size_t)m->n_labels * sizeof(char *);
        for (k = 0; k < (size_t)m->n_labels; k++) {
            size_t n = cli_escape(NULL, 0, m->labels[k]) + 1;
            cli_escape(text, n, m->labels[k]);
            safe[k] = text;
            text += n;
        }
        m->labels = safe;
    }
    return VIT_OK;
}

static void unload_model(vit_model *m) {
    vit_model_free(m);
    free(label_buf);
    label_buf = NULL;
}

/* Says so, loudly, when the file records that its weights were never trained. */
static void warn_untrained(const vit_model *m, const char *path) {
    const char *why = vit_model_meta(m, "untrained");
    if (why)
        fprintf(stderr, "vit: WARNING: %s holds untrained weights (%s): its predictions mean nothing\n", esc(path),
                esc(why));
}

/* "greyscale" or "colour": the images a ViT of c channels takes. */
static const char *channels_word(int c) { return c == 1 ? "greyscale" : c == 3 ? "colour" : "multi-channel"; }

/* What the file says it was trained on (its `dataset` metadata, as
   tools/train_fashion.py writes it): that kind of image is all it knows. */
static void print_trained_on(const vit_model *m) {
    const char *data = vit_model_meta(m, "dataset"), *acc = vit_model_meta(m, "test_accuracy");
    char *end;
    double a = acc ? strtod(acc, &end) : 0.0;
    if (!data) return;
    printf("  trained on: %s", esc(data));
    if (m->kind == VIT_KIND_VIT)
        printf(", %dx%d %s images", (int)m->cfg.image_size, (int)m->cfg.image_size, channels_word(m->cfg.in_channels));
    if (acc && end != acc && !*end && a > 0.0 && a <= 1.0) printf(" (test accuracy %.2f%%)", 100.0 * a);
    printf(": it knows that kind of image only, and gives confident answers on others too\n");
}

/* vit_model_describe's text, each line escaped. */
static int cmd_info(const cli_args *a) {
    const char *s;
    char *text, *line, *nl;
    size_t n;
    vit_model m;
    vit_result r = load_model(&m, a);
    if (r != VIT_OK) return fail(r);
    n = vit_model_describe(&m, NULL, 0) + 1;
    if (!(text = (char *)malloc(n))) {
        unload_model(&m);
        fprintf(stderr, "vit: out of memory\n");
        return 1;
    }
    vit_model_describe(&m, text, n);
    for (line = text; *line; line = nl + 1) {
        if ((nl = strchr(line, '\n'))) *nl = 0;
        printf(line == text ? "%s: %s\n" : "%s%s\n", line == text ? esc(a->pos[0]) : "", esc(line));
        if (line == text && (s = vit_model_meta(&m, "untrained"))) printf("  UNTRAINED: %s\n", esc(s));
        else if (line == text && (s = vit_model_meta(&m, "weights"))) printf("  weights: %s\n", esc(s));
        if (line == text) print_trained_on(&m);
        if (!nl) break;
    }
    free(text);
    unload_model(&m);
    return 0;
}

/* --threads, when given, for the forward passes to come. */
static int set_threads(const cli_args *a) {
    if (!a->given[O_THREADS]) return 0;
    if (vit_set_threads((int)a->num[O_THREADS]) != VIT_OK) return fail(VIT_ERR_ARG);
    if (vit_get_threads() != (int)a->num[O_THREADS])
        fprintf(stderr, "vit: note: --threads %ld, but this build has no threads (VIT_NO_THREADS): 1 thread\n",
                a->num[O_THREADS]);
    return 0;
}

static int cmd_run(const cli_args *a) {
    vit_model m;
    vit_arena io, act;
    vit_tensor x, y;
    vit_forward_opts opts;
    size_t bytes;
    vit_result r;
    memset(&opts, 0, sizeof opts);
    opts.features = a->given[O_FEATURES];
    opts.tokens = a->given[O_TOKENS];
    if (set_threads(a)) return 1;
    if ((r = load_model(&m, a)) != VIT_OK) return fail(r);
    /* The input's shape comes from its header alone (a counting arena), and
       the model checks it before anything is read: a large file of the
       wrong shape costs nothing. */
    vit_arena_init(&io, NULL, 0);
    if ((r = vit_npy_load(&io, a->pos[1], &x)) != VIT_OK || (r = vit_model_memory(&m, &x, &opts, &bytes)) != VIT_OK) {
        unload_model(&m);
        return fail(r);
    }
    if ((r = vit_arena_init_alloc(&io, io.peak)) != VIT_OK || (r = vit_npy_load(&io, a->pos[1], &x)) != VIT_OK ||
        (r = vit_arena_init_alloc(&act, bytes)) != VIT_OK) {
        vit_arena_free(&io);
        unload_model(&m);
        return fail(r);
    }
    r = vit_model_forward(&m, &act, &x, &opts, &y);
    if (r == VIT_OK) r = vit_npy_save(a->pos[2], &y);
    vit_arena_free(&act);
    vit_arena_free(&io);
    unload_model(&m);
    return r == VIT_OK ? 0 : fail(r);
}

static int cmd_input_shape(const cli_args *a) {
    vit_model m;
    int32_t shape[VIT_MAX_DIMS], ndim, i;
    vit_result r = load_model(&m, a);
    if (r != VIT_OK) return fail(r);
    r = vit_model_input_shape(&m, (int32_t)(a->npos > 1 ? a->num_pos[1] : 1),
                              (int32_t)(a->npos > 2 ? a->num_pos[2] : 16), (int32_t)(a->npos > 3 ? a->num_pos[3] : 16),
                              &ndim, shape);
    unload_model(&m);
    if (r != VIT_OK) return fail(r);
    for (i = 0; i < ndim; i++) printf(i ? " %d" : "%d", (int)shape[i]);
    printf("\n");
    return 0;
}

#ifndef VIT_NO_IMAGE
/* ---- classify and maps ---- */

/* --mean or --std over pp's, as many numbers as the model has channels
   (or one for all); 0, or 2 with a message. */
static int channel_option(const cli_args *a, const vit_model *m, int o, float v[3]) {
    int C = m->cfg.in_channels, n = a->nlist[o], c;
    if (!a->given[o]) return 0;
    if (n != 1 && n != C)
        return usage_fail(a, "%s %s: %d numbers for a model with %d channel%s (give 1 for every channel, or %d)",
                          cli_options[o].name, a->text[o], n, C, C == 1 ? "" : "s", C);
    for (c = 0; c < 3; c++) v[c] = a->list[o][n == 1 ? 0 : c < n ? c : 0];
    return 0;
}

/* The preparation of images for m: what the file asks for
   (vit_model_preprocess), the options over it. A crop other than the
   model's size (transformers' DINOv2) resizes its position embedding, unless
   --image-size set the size, which the crop then follows. 0, 1 or 2 with a
   message. */
static int preprocess_for(const cli_args *a, vit_model *m, vit_preprocess *pp) {
    vit_result r;
    if ((r = vit_model_preprocess(m, pp)) != VIT_OK) { /* the message names the metadata, not the file */
        fprintf(stderr, "vit: %s: %s\n", esc(a->pos[0]), esc(vit_last_error()));
        return 1;
    }
    if (pp->crop != m->cfg.image_size) {
        if (!a->given[O_IMAGE_SIZE]) {
            if ((r = vit_model_set_image_size(m, pp->crop)) != VIT_OK) return fail(r);
        } else {
            pp->resize = (int32_t)((int64_t)pp->resize * m->cfg.image_size / pp->crop);
            pp->crop = m->cfg.image_size;
        }
    }
    if (channel_option(a, m, O_MEAN, pp->mean) || channel_option(a, m, O_STD, pp->std)) return 2;
    if (a->given[O_RESIZE]) {
        if (a->num[O_RESIZE] < pp->crop)
            return usage_fail(a, "--resize %ld: smaller than the model's %d-pixel crop", a->num[O_RESIZE],
                              (int)pp->crop);
        pp->resize = (int32_t)a->num[O_RESIZE];
    }
    return 0;
}

/* The same crop as pp, left in [0, 1] for drawing, at least 224 pixels. */
static vit_preprocess display_crop(const vit_preprocess *pp) {
    vit_preprocess d = *pp;
    int32_t k = (224 + pp->crop - 1) / pp->crop;
    d.crop = pp->crop * k;
    d.resize = pp->resize * k;
    d.mean[0] = d.mean[1] = d.mean[2] = 0.0f;
    d.std[0] = d.std[1] = d.std[2] = 1.0f;
    return d;
}

/* What classify tells about an image beside its classes. */
typedef struct image_facts {
    int32_t h, w; /* its size as decoded */
    int colour;   /* 1: a colour image given to a greyscale model */
} image_facts;

/* For a greyscale model: 1 when the image at path has colour (over 1% of
   its pixels with channels 24/255 apart), read as RGB in a's scratch. */
static vit_result colour_image(vit_arena *a, const char *path, int *colour) {
    size_t mark = vit_arena_mark(a), i, n, k = 0;
    vit_tensor rgb;
    vit_result r = vit_image_load(a, path, 3, &rgb);
    *colour = 0;
    if (r == VIT_OK && !vit_arena_counting(a)) {
        const float *R, *G, *B;
        n = (size_t)rgb.shape[1] * rgb.shape[2];
        R = rgb.data, G = R + n, B = G + n;
        for (i = 0; i < n; i++) {
            float hi = R[i] > G[i] ? R[i] : G[i], lo = R[i] < G[i] ? R[i] : G[i];
            hi = B[i] > hi ? B[i] : hi, lo = B[i] < lo ? B[i] : lo;
            k += hi - lo > 24.0f / 255.0f;
        }
        *colour = k * 100 > n;
    }
    vit_arena_rewind(a, mark);
    return r;
}

/* One image through m, in arena a sized for it: a counting pass decodes
   and preprocesses it (and the display crop, with show) and sizes the
   forward (keeping attention in att when given), then a real one runs.
   `extra` bytes stay free after the forward for the caller. With facts,
   what classify notes about the image. */
static vit_result forward_image(const vit_model *m, const char *path, const vit_preprocess *pp,
                                const vit_preprocess *show, size_t extra, vit_tensor *att, vit_arena *a,
                                vit_tensor *crop, vit_tensor *out, image_facts *facts) {
    vit_arena count;
    vit_tensor img, x;
    vit_forward_opts opts;
    size_t fwd, total;
    vit_result r;
    int grey = facts && m->cfg.in_channels == 1;
    memset(&opts, 0, sizeof opts);
    opts.attn = att;
    if (facts) memset(facts, 0, sizeof *facts);
    vit_arena_init(&count, NULL, 0);
    if ((grey && (r = colour_image(&count, path, &facts->colour)) != VIT_OK) ||
        (r = vit_image_load(&count, path, m->cfg.in_channels, &img)) != VIT_OK ||
        (r = vit_image_preprocess(&count, &img, pp, &x)) != VIT_OK ||
        (show && (r = vit_image_preprocess(&count, &img, show, crop)) != VIT_OK) ||
        (r = vit_model_memory(m, &x, &opts, &fwd)) != VIT_OK)
        return r;
    /* Saturating: a sum past SIZE_MAX is a malloc that fails with vit.h's message. */
    total = count.peak + fwd < fwd ? SIZE_MAX : count.peak + fwd;
    total = total + extra + 4 * VIT_ALIGN < total ? SIZE_MAX : total + extra + 4 * VIT_ALIGN;
    if ((r = vit_arena_init_alloc(a, total)) != VIT_OK) return r;
    if ((grey && (r = colour_image(a, path, &facts->colour)) != VIT_OK) ||
        (r = vit_image_load(a, path, m->cfg.in_channels, &img)) != VIT_OK ||
        (r = vit_image_preprocess(a, &img, pp, &x)) != VIT_OK ||
        (show && (r = vit_image_preprocess(a, &img, show, crop)) != VIT_OK) ||
        (r = vit_model_forward(m, a, &x, &opts, out)) != VIT_OK)
        vit_arena_free(a);
    else if (facts) facts->h = img.shape[1], facts->w = img.shape[2];
    return r;
}

/* A note on stderr when an image is far from what m takes: a colour image
   for a greyscale model (the shipped Fashion-MNIST ViT given a photo), or
   one whose short side is 16 times the model's crop. The answer is printed
   all the same. */
static void note_far_image(const vit_model *m, const char *model, const char *path, const vit_preprocess *pp,
                           const image_facts *f) {
    const char *data = vit_model_meta(m, "dataset");
    int32_t S = f->h < f->w ? f->h : f->w;
    if (!f->colour && S < 16 * pp->crop) return;
    fprintf(stderr, "vit: note: %s is a %dx%d%s image; %s takes %dx%d %s images%s%s%s: its answer may mean little\n",
            esc(path), (int)f->w, (int)f->h, f->colour ? " colour" : "", esc(model), (int)pp->crop, (int)pp->crop,
            channels_word(m->cfg.in_channels), data ? " (trained on " : "", data ? esc(data) : "", data ? ")" : "");
}

/* Softmax of logits (1, classes) in place; best gets the k most likely
   classes, their probabilities in prob. The logits are used up. */
static void top_classes(vit_tensor *logits, int k, int *best, float *prob) {
    int n = logits->shape[1], i, j;
    float *p = logits->data;
    vit_k_softmax(p, p, 1, n);
    for (j = 0; j < k && j < n; j++) {
        best[j] = 0;
        for (i = 1; i < n; i++)
            if (p[i] > p[best[j]]) best[j] = i;
        prob[j] = p[best[j]];
        p[best[j]] = -1.0f;
    }
}

static const char *class_name(const vit_model *m, int k) {
    static char buf[32];
    if (vit_model_label(m, k)) return vit_model_label(m, k);
    snprintf(buf, sizeof buf, "class %d", k);
    return buf;
}

/* Load, --threads, and the checks classify and maps share (maps: a class token). */
static int image_command_setup(const cli_args *a, vit_model *m, vit_preprocess *pp, int need_head) {
    int r;
    if (set_threads(a)) return 1;
    if ((r = (int)load_model(m, a)) != VIT_OK) return fail((vit_result)r);
    if (m->kind != VIT_KIND_VIT || (need_head && m->cfg.num_classes < 1) || (!need_head && !m->cfg.class_token)) {
        if (m->kind != VIT_KIND_VIT)
            usage_fail(a, "%s holds a module (kind %s), not a ViT%s", a->pos[0], vit_kind_name(m->kind),
                       need_head ? " classifier" : "");
        else if (need_head) usage_fail(a, "%s is a ViT without a head, not a classifier", a->pos[0]);
        else usage_fail(a, "%s is a ViT without a class token: the maps are the class token's attention", a->pos[0]);
        unload_model(m);
        return 2;
    }
    if ((r = preprocess_for(a, m, pp))) {
        unload_model(m);
        return (int)r;
    }
    warn_untrained(m, a->pos[0]);
    return 0;
}

static int cmd_classify(const cli_args *a) {
    vit_model m;
    vit_preprocess pp;
    int i, j, status = 0, k = a->given[O_TOP] ? (int)a->num[O_TOP] : 5, *best;
    float *prob;
    if ((i = image_command_setup(a, &m, &pp, 1))) return i;
    if (k > m.cfg.num_classes) k = m.cfg.num_classes;
    best = (int *)malloc((size_t)k * sizeof(int));
    prob = (float *)malloc((size_t)k * sizeof(float));
    if (!best || !prob) {
        free(best);
        free(prob);
        unload_model(&m);
        fprintf(stderr, "vit: out of memory for the top %d classes\n", k);
        return 1;
    }
    for (i = 1; i < a->npos; i++) {
        vit_arena act;
        vit_tensor logits;
        image_facts facts;
        vit_result r = forward_image(&m, a->pos[i], &pp, NULL, 0, NULL, &act, NULL, &logits, &facts);
        if (r != VIT_OK) {
            status = fail(r);
            continue;
        }
        note_far_image(&m, a->pos[0], a->pos[i], &pp, &facts);
        if (a->npos > 2) printf("%s\n", esc(a->pos[i]));
        top_classes(&logits, k, best, prob);
        for (j = 0; j < k; j++) printf("%6.2f%%  %4d  %s\n", 100.0f * prob[j], best[j], class_name(&m, best[j]));
        vit_arena_free(&act);
    }
    free(best);
    free(prob);
    unload_model(&m);
    return status;
}

/* "photos/cat.jpg" -> "cat": where it starts in path, its length in *len. */
static const char *stem(const char *path, int *len) {
    const char *b = path, *p, *dot;
    for (p = path; *p; p++)
        if (*p == '/' || *p == '\\') b = p + 1;
    dot = strrchr(b, '.');
    *len = (int)(dot && dot != b ? (size_t)(dot - b) : strlen(b));
    return b;
}

/* "DIR/<stem>_<what>.png" in a buffer sized for it (free it), or NULL
   with a message: never a name cut to a fixed size, where each PNG would
   overwrite the last. */
static char *png_path(const char *dir, const char *image, const char *what) {
    int n;
    const char *s = stem(image, &n);
    size_t size = strlen(dir) + (size_t)n + strlen(what) + 8;
    char *path = (char *)malloc(size);
    if (!path) {
        fprintf(stderr, "vit maps: out of memory for a file name in --out %s\n", esc(dir));
        return NULL;
    }
    snprintf(path, size, "%s/%.*s_%s.png", dir, n, s, what);
    return path;
}

/* The folder for the PNGs, made when missing. */
static int make_dir(const char *dir) {
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return 0;
        fprintf(stderr, "vit maps: --out %s: exists and is not a folder\n", esc(dir));
        return 1;
    }
    if (cli_mkdir(dir) != 0) {
        fprintf(stderr, "vit maps: --out %s: cannot make the folder (%s)\n", esc(dir), strerror(errno));
        return 1;
    }
    return 0;
}

/* maps --method: per image and class (--class, else the --top K likeliest,
   else the likeliest) or direction (--target), the method's map over the
   crop the model saw, DIR/<stem>_<method>_<K|target>.png, and with --npy
   the raw map beside it. */
static int cmd_explain(const cli_args *a) {
    vit_model m;
    vit_preprocess pp, show;
    vit_explain_params ep;
    vit_method method = (vit_method)a->num[O_METHOD];
    vit_arena ta;
    vit_tensor target;
    int cls[64], ncls = 0, i, j, k, status = 0, W, G, S, pixels, top;
    if (set_threads(a)) return 1;
    if ((i = (int)load_model(&m, a)) != VIT_OK) return fail((vit_result)i);
    if (m.kind != VIT_KIND_VIT) {
        usage_fail(a, "%s holds a module (kind %s), not a ViT", a->pos[0], vit_kind_name(m.kind));
        unload_model(&m);
        return 2;
    }
    W = vit_model_output_width(&m, 0);
    memset(&ta, 0, sizeof ta);

    /* what to explain: classes by number or label, or a direction */
    if (a->given[O_TARGET]) {
        if (vit_arena_init_alloc(&ta, (size_t)W * sizeof(float) + 65536) != VIT_OK ||
            vit_npy_load(&ta, a->text[O_TARGET], &target) != VIT_OK) {
            i = fail(VIT_ERR_IO);
            vit_arena_free(&ta);
            unload_model(&m);
            return i;
        }
        if ((int)vit_tensor_numel(&target) != W) {
            usage_fail(a, "--target %s: %d values, the model has %d outputs", a->text[O_TARGET],
                       (int)vit_tensor_numel(&target), W);
            vit_arena_free(&ta);
            unload_model(&m);
            return 2;
        }
    } else if (m.cfg.num_classes < 1) {
        usage_fail(a, "%s is a ViT without a head: it has no classes to explain (give --target FILE.npy, a direction "
                      "of its %d features)",
                   a->pos[0], W);
        unload_model(&m);
        return 2;
    }
    for (k = 0; k < a->nclasses; k++) {
        const char *c = a->classes[k];
        char *end;
        long v = strtol(c, &end, 10);
        int found = -1;
        if (end != c && !*end) {
            if (v < 0 || v >= m.cfg.num_classes) {
                usage_fail(a, "--class %s: out of range, the model has classes 0..%d", c, (int)m.cfg.num_classes - 1);
                unload_model(&m);
                return 2;
            }
            found = (int)v;
        } else {
            for (j = 0; j < m.cfg.num_classes && found < 0; j++)
                if (vit_model_label(&m, j) && !strcmp(vit_model_label(&m, j), c)) found = j;
            if (found < 0) {
                usage_fail(a, "--class '%s': no label of %s is that (give a number, or a name as `vit info` lists)", c,
                           a->pos[0]);
                unload_model(&m);
                return 2;
            }
        }
        cls[ncls++] = found;
    }
    if ((i = preprocess_for(a, &m, &pp))) {
        vit_arena_free(&ta);
        unload_model(&m);
        return i;
    }
    warn_untrained(&m, a->pos[0]);
    if (make_dir(a->text[O_OUT])) {
        vit_arena_free(&ta);
        unload_model(&m);
        return 1;
    }
    show = display_crop(&pp);
    memset(&ep, 0, sizeof ep);
    ep.discard_ratio = method == VIT_METHOD_ROLLOUT || method == VIT_METHOD_GRAD_ROLLOUT
                           ? (a->given[O_DISCARD] ? (float)a->real[O_DISCARD] : 0.9f)
                           : 0.0f;
    ep.paper_pairing = a->given[O_PAIRING] && a->num[O_PAIRING] == 1;
    ep.ig_steps = a->given[O_STEPS] ? (int32_t)a->num[O_STEPS] : CLI_IG_STEPS;
    G = m.cfg.image_size / m.cfg.patch_size;
    S = m.cfg.image_size;
    pixels = method >= VIT_METHOD_SALIENCY;
    top = a->given[O_TOP] ? (int)a->num[O_TOP] : 1;
    if (top > m.cfg.num_classes) top = m.cfg.num_classes;

    for (i = 1; i < a->npos; i++) {
        vit_arena count, act;
        vit_tensor img, x, crop, logits, mapt;
        vit_forward_opts fo;
        size_t fwd = 0, exb = 0, total;
        int32_t n = vit_explain_size(&m, method), shape[2];
        int these[64], nthese = 0, t;
        float *map, *prob = NULL;
        vit_result r;
        memset(&fo, 0, sizeof fo);

        /* sizes: the image, its crops, the forward (the classes' probabilities), the explanation, the map */
        vit_arena_init(&count, NULL, 0);
        if ((r = vit_image_load(&count, a->pos[i], m.cfg.in_channels, &img)) != VIT_OK ||
            (r = vit_image_preprocess(&count, &img, &pp, &x)) != VIT_OK ||
            (r = vit_image_preprocess(&count, &img, &show, &crop)) != VIT_OK ||
            (r = vit_model_memory(&m, &x, NULL, &fwd)) != VIT_OK ||
            (r = vit_explain_memory(&m, &x, method, &ep, &exb)) != VIT_OK) {
            status = fail(r);
            continue;
        }
        total = count.peak + fwd + exb + (size_t)n * sizeof(float) + 8 * VIT_ALIGN;
        if ((r = vit_arena_init_alloc(&act, total)) != VIT_OK) {
            status = fail(r);
            continue;
        }
        shape[0] = pixels ? S : G;
        shape[1] = pixels ? S : G;
        if ((r = vit_image_load(&act, a->pos[i], m.cfg.in_channels, &img)) != VIT_OK ||
            (r = vit_image_preprocess(&act, &img, &pp, &x)) != VIT_OK ||
            (r = vit_image_preprocess(&act, &img, &show, &crop)) != VIT_OK ||
            (r = vit_tensor_init(&act, &mapt, 2, shape)) != VIT_OK) {
            status = fail(r);
            vit_arena_free(&act);
            continue;
        }
        map = mapt.data;
        crop = vit_tensor_view(&crop, 0); /* (C, S, S) */

        /* the classes: given, else the likeliest (their probabilities printed beside) */
        if (!a->given[O_TARGET]) {
            size_t mark = vit_arena_mark(&act);
            if ((r = vit_model_forward(&m, &act, &x, &fo, &logits)) != VIT_OK) {
                status = fail(r);
                vit_arena_free(&act);
                continue;
            }
            vit_k_softmax(logits.data, logits.data, 1, m.cfg.num_classes);
            prob = logits.data;
            if (ncls) {
                for (t = 0; t < ncls; t++) these[nthese++] = cls[t];
            } else {
                for (t = 0; t < top && t < 64; t++) {
                    int best = -1;
                    for (j = 0; j < m.cfg.num_classes; j++) {
                        int taken = 0, u;
                        for (u = 0; u < nthese; u++) taken |= these[u] == j;
                        if (!taken && (best < 0 || prob[j] > prob[best])) best = j;
                    }
                    these[nthese++] = best;
                }
            }
            (void)mark; /* the logits stay: the explanation's scratch comes after them */
        } else {
            these[nthese++] = -1;
        }

        /* one map per class */
        for (t = 0; t < nthese; t++) {
            char what[64], *path, *npy = NULL;
            if (these[t] >= 0) snprintf(what, sizeof what, "%s_%d", vit_method_name(method), these[t]);
            else snprintf(what, sizeof what, "%s_target", vit_method_name(method));
            if ((r = vit_explain(&m, &act, &x, method, these[t], these[t] >= 0 ? NULL : target.data, &ep, map)) !=
                VIT_OK) {
                status = fail(r);
                break;
            }
            if (!(path = png_path(a->text[O_OUT], a->pos[i], what))) {
                status = 1;
                break;
            }
            r = vit_png_overlay(path, &crop, map, shape[0], shape[1], 0.6f);
            if (r == VIT_OK && a->given[O_NPY]) {
                size_t len = strlen(path);
                if (!(npy = (char *)malloc(len + 1))) r = VIT_ERR_OOM;
                else {
                    memcpy(npy, path, len - 3);
                    memcpy(npy + len - 3, "npy", 4);
                    r = vit_npy_save(npy, &mapt);
                }
            }
            if (r != VIT_OK) status = fail(r);
            else if (these[t] >= 0)
                printf("%s: %s for class %d%s%s (%.2f%%)%s%s\n", esc(path), vit_method_name(method), these[t],
                       vit_model_label(&m, these[t]) ? " " : "",
                       vit_model_label(&m, these[t]) ? vit_model_label(&m, these[t]) : "", 100.0f * prob[these[t]],
                       npy ? ", raw map in " : "", npy ? esc(npy) : "");
            else
                printf("%s: %s for the direction in %s%s%s\n", esc(path), vit_method_name(method),
                       esc(a->text[O_TARGET]), npy ? ", raw map in " : "", npy ? esc(npy) : "");
            free(path);
            free(npy);
        }
        vit_arena_free(&act);
    }
    vit_arena_free(&ta);
    unload_model(&m);
    return status;
}

static int cmd_maps(const cli_args *a) {
    static const char *fusion_names[3] = {"mean", "max", "min"};
    static const char *const outs[3] = {"heads", "fused", "rollout"}; /* DIR/<stem>_<out>.png */
    vit_model m;
    vit_preprocess pp, show;
    vit_rollout_params rp;
    vit_tensor *att;
    int i, j, layer, G, NH, T, skip, status = 0;
    size_t extra;
    if (a->given[O_METHOD]) return cmd_explain(a);
    if ((i = image_command_setup(a, &m, &pp, 0))) return i;
    layer = a->given[O_LAYER] ? (int)a->num[O_LAYER] : m.cfg.depth - 1;
    if (layer >= m.cfg.depth) {
        usage_fail(a, "--layer %d: the model has %d layers (0..%d)", layer, (int)m.cfg.depth, (int)m.cfg.depth - 1);
        unload_model(&m);
        return 2;
    }
    for (i = 1; i < a->npos; i++) /* one set of PNGs per name */
        for (j = 1; j < i; j++) {
            int n1, n2;
            const char *s1 = stem(a->pos[i], &n1), *s2 = stem(a->pos[j], &n2);
            if (n1 == n2 && !memcmp(s1, s2, (size_t)n1)) {
                usage_fail(a, "%s and %s would both write %.*s_*.png", a->pos[j], a->pos[i], n1, s1);
                unload_model(&m);
                return 2;
            }
        }
    if (make_dir(a->text[O_OUT]) || !(att = (vit_tensor *)calloc((size_t)m.cfg.depth, sizeof *att))) {
        unload_model(&m);
        return 1;
    }
    show = display_crop(&pp);
    rp.fusion = a->given[O_FUSION] ? (vit_fusion)a->num[O_FUSION] : VIT_FUSE_MEAN;
    rp.discard_ratio = a->given[O_DISCARD] ? (float)a->real[O_DISCARD] : 0.9f;
    rp.explain_compat = 0;
    G = m.cfg.image_size / m.cfg.patch_size;
    NH = m.cfg.heads;
    skip =
        vit_model_prefix_tokens(&m) - 1; /* registers, a distillation token: between the class token and the patches */
    T = G * G + skip + 1;                   /* tokens */
    /* After the forward: one map per head, a row, then vit_map_rollout's
       scratch (three T x T matrices, T sums, a ranking of T x T entries). */
    extra = ((size_t)NH * G * G + (size_t)T) * sizeof(float) + (size_t)T * T * (3 * sizeof(float) + 8) +
            (size_t)T * sizeof(float) + 8 * VIT_ALIGN;
    for (i = 1; i < a->npos; i++) {
        vit_arena act;
        vit_tensor crop, logits;
        float *maps, *row, prob;
        int best, k, no_name = 0;
        vit_result r = forward_image(&m, a->pos[i], &pp, &show, extra, att, &act, &crop, &logits, NULL);
        if (r != VIT_OK) {
            status = fail(r);
            continue;
        }
        if (m.cfg.num_classes < 1) { /* the forward gave features: there is no class to name */
            printf("%s: no class (a ViT without a head: its maps only)\n", esc(a->pos[i]));
        } else {
            top_classes(&logits, 1, &best, &prob);
            if (vit_model_label(&m, best))
                printf("%s: %s (class %d, %.2f%%)\n", esc(a->pos[i]), vit_model_label(&m, best), best, 100.0f * prob);
            else printf("%s: class %d (%.2f%%)\n", esc(a->pos[i]), best, 100.0f * prob);
        }
        crop = vit_tensor_view(&crop, 0); /* (C, S, S) */
        maps = (float *)vit_arena_alloc(&act, (size_t)NH * G * G * sizeof(float));
        row = (float *)vit_arena_alloc(
            &act, (size_t)T * sizeof(float)); /* the class token's row, then the patches' part of it */
        r = maps && row ? VIT_OK : VIT_ERR_OOM;
        for (j = 0; r == VIT_OK && j < NH; j++)
            if ((r = vit_map_cls(&att[layer], 0, j, VIT_FUSE_MEAN, row)) == VIT_OK)
                memcpy(maps + (size_t)j * G * G, row + skip, (size_t)G * G * sizeof(float));
        for (k = 0; r == VIT_OK && k < 3; k++) {
            char *path = png_path(a->text[O_OUT], a->pos[i], outs[k]);
            if (!path) {
                no_name = 1;
                break;
            }
            if (k == 0 && (r = vit_png_grid(path, &crop, maps, NH, G, G, NH < 6 ? NH : 6, 160, 0.6f)) == VIT_OK)
                printf("  %s: the class token's attention in each of the %d heads of layer %d\n", esc(path), NH, layer);
            if (k == 1 && (r = vit_map_cls(&att[layer], 0, -1, rp.fusion, row)) == VIT_OK &&
                (r = vit_png_overlay(path, &crop, row + skip, G, G, 0.6f)) == VIT_OK)
                printf("  %s: layer %d's heads fused by %s\n", esc(path), layer, fusion_names[rp.fusion]);
            if (k == 2 && (r = vit_map_rollout(&act, att, m.cfg.depth, 0, &rp, row)) == VIT_OK &&
                (r = vit_png_overlay(path, &crop, row + skip, G, G, 0.6f)) == VIT_OK)
                printf("  %s: rollout through %d layers, %s fusion, %.2f discarded\n", esc(path), (int)m.cfg.depth,
                       fusion_names[rp.fusion], (double)rp.discard_ratio);
            free(path);
        }
        if (no_name) status = 1;
        if (r != VIT_OK) status = fail(r);
        vit_arena_free(&act);
    }
    free(att);
    unload_model(&m);
    return status;
}
#endif

int main(int argc, char **argv) {
    static cli_args a; /* 40 KB of positional pointers: not on the stack */
    switch (cli_parse(argc, argv, &a)) {
    case CLI_HELP: cli_usage(stdout, a.cmd); return 0;
    case CLI_VERSION: printf("vit.h %s\n", vit_version()); return 0;
    case CLI_ERROR:
        if (a.cmd && a.cmd->bit != C_HELP)
            fprintf(stderr, "%s\nrun 'vit help %s' for the usage\n", esc(a.err), a.cmd->name);
        else fprintf(stderr, "%s\nrun 'vit help' for the usage\n", esc(a.err));
        return 2;
    default: break;
    }
    switch (a.cmd->bit) {
    case C_INFO: return cmd_info(&a);
    case C_RUN: return cmd_run(&a);
    case C_SHAPE: return cmd_input_shape(&a);
#ifndef VIT_NO_IMAGE
    case C_CLASSIFY: return cmd_classify(&a);
    case C_MAPS: return cmd_maps(&a);
#else
    case C_CLASSIFY:
    case C_MAPS: fprintf(stderr, "vit %s: this build has no image support (VIT_NO_IMAGE)\n", a.cmd->name); return 1;
#endif
    default: printf("vit.h %s\n", vit_version()); return 0;
    }
}
#endif /* VIT_CLI_NO_MAIN */
