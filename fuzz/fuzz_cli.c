/* libFuzzer target: any bytes as the vit command's arguments (split at NUL
   bytes), through cli/vit.c's parser, and each argument through the
   escaping that guards the terminal. Traps when the parser accepts a value
   outside an option's bounds, a wrong count of arguments or numbers, or
   refuses without a message; or when escaped text keeps a control byte. */
#define VIT_CLI_NO_MAIN
#include "../cli/vit.c"

static void check(int ok) {
    if (!ok) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static cli_args a;
    char buf[4096], out[4 * 4096 + 1], *argv[64];
    int argc = 1, r, o, i;
    size_t k, n = size < sizeof buf - 1 ? size : sizeof buf - 1;
    memcpy(buf, data, n);
    buf[n] = 0;
    argv[0] = (char *)"vit";
    for (k = 0; k <= n && argc < 64; k += strlen(buf + k) + 1) argv[argc++] = buf + k;
    r = cli_parse(argc, argv, &a);
    check(r == CLI_OK || r == CLI_ERROR || r == CLI_HELP || r == CLI_VERSION);
    if (r == CLI_ERROR) check(!strncmp(a.err, "vit", 3) && strlen(a.err) > 5);
    if (r == CLI_OK) {
        check(a.cmd != NULL && a.npos >= a.cmd->min_pos && a.npos <= a.cmd->max_pos);
        for (o = 0; o < O_COUNT; o++) {
            if (!a.given[o]) continue;
            check((cli_options[o].cmds & a.cmd->bit) != 0);
            if (cli_options[o].type == T_INT) check(a.num[o] >= cli_options[o].lo && a.num[o] <= cli_options[o].hi);
            if (cli_options[o].type == T_REAL) check(a.real[o] >= cli_options[o].lo && a.real[o] < cli_options[o].hi);
            if (cli_options[o].type == T_LIST) check(a.nlist[o] >= 1 && a.nlist[o] <= 3);
            for (i = 0; o == O_STD && i < a.nlist[o]; i++) check(a.list[o][i] > 0.0f);
        }
        check(a.cmd->bit != C_MAPS || a.given[O_OUT]);
        /* the reverse pass's options: only with --method; --class repeats, within its table */
        check(a.nclasses >= 0 && a.nclasses <= 64 && (a.nclasses > 0) == a.given[O_CLASS]);
        for (i = 0; i < a.nclasses; i++) check(a.classes[i] != NULL);
        check(a.given[O_METHOD] || !(a.given[O_CLASS] || a.given[O_TARGET] || a.given[O_NPY] || a.given[O_STEPS]));
        check(!a.given[O_TARGET] || !(a.given[O_CLASS] || a.given[O_TOP]));
    }
    for (i = 1; i < argc; i++) {
        size_t len = cli_escape(out, sizeof out, argv[i]);
        check(len == strlen(out));
        for (k = 0; k < len; k++) check((unsigned char)out[k] >= 0x20 && out[k] != 0x7f);
    }
    return 0;
}
