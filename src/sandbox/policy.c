/*
 * The command policy, ported from the seed's policies.py; see policy.h and
 * docs/internals/policy.md.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/utf8.h"
#include "config/config.h"
#include "sandbox/policy.h"

const char *const policy_default_denied[] = {
	/* destructive / system */
	"rm", "rmdir", "sudo", "su", "doas", "shutdown", "reboot", "poweroff",
	"halt", "mkfs", "dd", "fdisk", "format", "chmod", "chown", "kill",
	"killall", "pkill", "systemctl", "service", "launchctl", "reg", "regedit",
	/* shells */
	"sh", "bash", "zsh", "dash", "ksh", "csh", "tcsh", "fish", "cmd",
	"powershell", "pwsh",
	/* argument launchers / bypasses */
	"env", "xargs", "find", "nohup", "timeout", "stdbuf", "nice", "watch", "tee",
	NULL,
};

/*
 * Beyond the seed: shells its list misses, denied with the default list
 * (a restricted shell still runs any command on PATH, and `busybox ash`
 * is judged as `ash`). A custom deny list replaces these too.
 */
const char *const policy_extra_denied[] = {
	"rbash", "ash", "mksh", "lksh", "oksh", "loksh", "yash", "posh", "sash",
	"elvish", "xonsh", "nu", "ion", "rc", "es", "osh", "oil", "ysh",
	NULL,
};

const char *const policy_default_network[] = {
	"pip", "pip3", "uv", "npm", "npx", "pnpm", "yarn", "bun", "cargo", "go",
	"curl", "wget", "docker", "podman",
	NULL,
};

/* ---- Python's str.lower() over UTF-8 ---------------------------------- */

/*
 * The seed lower-cases with str.lower(), which maps every cased letter of
 * Unicode, not only A-Z: "\u212Aill" (KELVIN SIGN) becomes "kill", and a
 * custom list may hold non-ASCII names. To decide as the seed does, names
 * are lowered with the same full mapping, including U+0130 (two code
 * points) and the context rule for final sigma. The tables between the
 * markers are generated from Python 3.11 (Unicode 14.0) by
 * tests/fixtures/policy/gen_lower.py; do not edit them by hand.
 */

struct lower_run {
	uint32_t first;		/* first code point of the run */
	uint16_t count;		/* code points in the run */
	uint8_t stride;		/* 1: consecutive; 2: every other one */
	int32_t delta;		/* lower-case = code point + delta */
};

struct cp_range {
	uint32_t first, last;
};

/* BEGIN GENERATED TABLES (tests/fixtures/policy/gen_lower.py) */
/* from Python's str.lower(), Unicode 14.0.0 */
static const struct lower_run lower_runs[] = {
	{ 0x0041, 26, 1, 32 }, { 0x00c0, 23, 1, 32 }, { 0x00d8, 7, 1, 32 },
	{ 0x0100, 24, 2, 1 }, { 0x0132, 3, 2, 1 }, { 0x0139, 8, 2, 1 },
	{ 0x014a, 23, 2, 1 }, { 0x0178, 1, 1, -121 }, { 0x0179, 3, 2, 1 },
	{ 0x0181, 1, 1, 210 }, { 0x0182, 2, 2, 1 }, { 0x0186, 1, 1, 206 },
	{ 0x0187, 1, 1, 1 }, { 0x0189, 2, 1, 205 }, { 0x018b, 1, 1, 1 },
	{ 0x018e, 1, 1, 79 }, { 0x018f, 1, 1, 202 }, { 0x0190, 1, 1, 203 },
	{ 0x0191, 1, 1, 1 }, { 0x0193, 1, 1, 205 }, { 0x0194, 1, 1, 207 },
	{ 0x0196, 1, 1, 211 }, { 0x0197, 1, 1, 209 }, { 0x0198, 1, 1, 1 },
	{ 0x019c, 1, 1, 211 }, { 0x019d, 1, 1, 213 }, { 0x019f, 1, 1, 214 },
	{ 0x01a0, 3, 2, 1 }, { 0x01a6, 1, 1, 218 }, { 0x01a7, 1, 1, 1 },
	{ 0x01a9, 1, 1, 218 }, { 0x01ac, 1, 1, 1 }, { 0x01ae, 1, 1, 218 },
	{ 0x01af, 1, 1, 1 }, { 0x01b1, 2, 1, 217 }, { 0x01b3, 2, 2, 1 },
	{ 0x01b7, 1, 1, 219 }, { 0x01b8, 1, 1, 1 }, { 0x01bc, 1, 1, 1 },
	{ 0x01c4, 1, 1, 2 }, { 0x01c5, 1, 1, 1 }, { 0x01c7, 1, 1, 2 },
	{ 0x01c8, 1, 1, 1 }, { 0x01ca, 1, 1, 2 }, { 0x01cb, 9, 2, 1 },
	{ 0x01de, 9, 2, 1 }, { 0x01f1, 1, 1, 2 }, { 0x01f2, 2, 2, 1 },
	{ 0x01f6, 1, 1, -97 }, { 0x01f7, 1, 1, -56 }, { 0x01f8, 20, 2, 1 },
	{ 0x0220, 1, 1, -130 }, { 0x0222, 9, 2, 1 }, { 0x023a, 1, 1, 10795 },
	{ 0x023b, 1, 1, 1 }, { 0x023d, 1, 1, -163 }, { 0x023e, 1, 1, 10792 },
	{ 0x0241, 1, 1, 1 }, { 0x0243, 1, 1, -195 }, { 0x0244, 1, 1, 69 },
	{ 0x0245, 1, 1, 71 }, { 0x0246, 5, 2, 1 }, { 0x0370, 2, 2, 1 },
	{ 0x0376, 1, 1, 1 }, { 0x037f, 1, 1, 116 }, { 0x0386, 1, 1, 38 },
	{ 0x0388, 3, 1, 37 }, { 0x038c, 1, 1, 64 }, { 0x038e, 2, 1, 63 },
	{ 0x0391, 17, 1, 32 }, { 0x03a4, 8, 1, 32 }, { 0x03cf, 1, 1, 8 },
	{ 0x03d8, 12, 2, 1 }, { 0x03f4, 1, 1, -60 }, { 0x03f7, 1, 1, 1 },
	{ 0x03f9, 1, 1, -7 }, { 0x03fa, 1, 1, 1 }, { 0x03fd, 3, 1, -130 },
	{ 0x0400, 16, 1, 80 }, { 0x0410, 32, 1, 32 }, { 0x0460, 17, 2, 1 },
	{ 0x048a, 27, 2, 1 }, { 0x04c0, 1, 1, 15 }, { 0x04c1, 7, 2, 1 },
	{ 0x04d0, 48, 2, 1 }, { 0x0531, 38, 1, 48 }, { 0x10a0, 38, 1, 7264 },
	{ 0x10c7, 1, 1, 7264 }, { 0x10cd, 1, 1, 7264 }, { 0x13a0, 80, 1, 38864 },
	{ 0x13f0, 6, 1, 8 }, { 0x1c90, 43, 1, -3008 }, { 0x1cbd, 3, 1, -3008 },
	{ 0x1e00, 75, 2, 1 }, { 0x1e9e, 1, 1, -7615 }, { 0x1ea0, 48, 2, 1 },
	{ 0x1f08, 8, 1, -8 }, { 0x1f18, 6, 1, -8 }, { 0x1f28, 8, 1, -8 },
	{ 0x1f38, 8, 1, -8 }, { 0x1f48, 6, 1, -8 }, { 0x1f59, 4, 2, -8 },
	{ 0x1f68, 8, 1, -8 }, { 0x1f88, 8, 1, -8 }, { 0x1f98, 8, 1, -8 },
	{ 0x1fa8, 8, 1, -8 }, { 0x1fb8, 2, 1, -8 }, { 0x1fba, 2, 1, -74 },
	{ 0x1fbc, 1, 1, -9 }, { 0x1fc8, 4, 1, -86 }, { 0x1fcc, 1, 1, -9 },
	{ 0x1fd8, 2, 1, -8 }, { 0x1fda, 2, 1, -100 }, { 0x1fe8, 2, 1, -8 },
	{ 0x1fea, 2, 1, -112 }, { 0x1fec, 1, 1, -7 }, { 0x1ff8, 2, 1, -128 },
	{ 0x1ffa, 2, 1, -126 }, { 0x1ffc, 1, 1, -9 }, { 0x2126, 1, 1, -7517 },
	{ 0x212a, 1, 1, -8383 }, { 0x212b, 1, 1, -8262 }, { 0x2132, 1, 1, 28 },
	{ 0x2160, 16, 1, 16 }, { 0x2183, 1, 1, 1 }, { 0x24b6, 26, 1, 26 },
	{ 0x2c00, 48, 1, 48 }, { 0x2c60, 1, 1, 1 }, { 0x2c62, 1, 1, -10743 },
	{ 0x2c63, 1, 1, -3814 }, { 0x2c64, 1, 1, -10727 }, { 0x2c67, 3, 2, 1 },
	{ 0x2c6d, 1, 1, -10780 }, { 0x2c6e, 1, 1, -10749 }, { 0x2c6f, 1, 1, -10783 },
	{ 0x2c70, 1, 1, -10782 }, { 0x2c72, 1, 1, 1 }, { 0x2c75, 1, 1, 1 },
	{ 0x2c7e, 2, 1, -10815 }, { 0x2c80, 50, 2, 1 }, { 0x2ceb, 2, 2, 1 },
	{ 0x2cf2, 1, 1, 1 }, { 0xa640, 23, 2, 1 }, { 0xa680, 14, 2, 1 },
	{ 0xa722, 7, 2, 1 }, { 0xa732, 31, 2, 1 }, { 0xa779, 2, 2, 1 },
	{ 0xa77d, 1, 1, -35332 }, { 0xa77e, 5, 2, 1 }, { 0xa78b, 1, 1, 1 },
	{ 0xa78d, 1, 1, -42280 }, { 0xa790, 2, 2, 1 }, { 0xa796, 10, 2, 1 },
	{ 0xa7aa, 1, 1, -42308 }, { 0xa7ab, 1, 1, -42319 }, { 0xa7ac, 1, 1, -42315 },
	{ 0xa7ad, 1, 1, -42305 }, { 0xa7ae, 1, 1, -42308 }, { 0xa7b0, 1, 1, -42258 },
	{ 0xa7b1, 1, 1, -42282 }, { 0xa7b2, 1, 1, -42261 }, { 0xa7b3, 1, 1, 928 },
	{ 0xa7b4, 8, 2, 1 }, { 0xa7c4, 1, 1, -48 }, { 0xa7c5, 1, 1, -42307 },
	{ 0xa7c6, 1, 1, -35384 }, { 0xa7c7, 2, 2, 1 }, { 0xa7d0, 1, 1, 1 },
	{ 0xa7d6, 2, 2, 1 }, { 0xa7f5, 1, 1, 1 }, { 0xff21, 26, 1, 32 },
	{ 0x10400, 40, 1, 40 }, { 0x104b0, 36, 1, 40 }, { 0x10570, 11, 1, 39 },
	{ 0x1057c, 15, 1, 39 }, { 0x1058c, 7, 1, 39 }, { 0x10594, 2, 1, 39 },
	{ 0x10c80, 51, 1, 64 }, { 0x118a0, 32, 1, 32 }, { 0x16e40, 32, 1, 32 },
	{ 0x1e900, 34, 1, 34 },
};

static const struct cp_range case_ignorable_ranges[] = {
	{ 0x0027, 0x0027 }, { 0x002e, 0x002e }, { 0x003a, 0x003a }, { 0x005e, 0x005e },
	{ 0x0060, 0x0060 }, { 0x00a8, 0x00a8 }, { 0x00ad, 0x00ad }, { 0x00af, 0x00af },
	{ 0x00b4, 0x00b4 }, { 0x00b7, 0x00b8 }, { 0x02b0, 0x036f }, { 0x0374, 0x0375 },
	{ 0x037a, 0x037a }, { 0x0384, 0x0385 }, { 0x0387, 0x0387 }, { 0x0483, 0x0489 },
	{ 0x0559, 0x0559 }, { 0x055f, 0x055f }, { 0x0591, 0x05bd }, { 0x05bf, 0x05bf },
	{ 0x05c1, 0x05c2 }, { 0x05c4, 0x05c5 }, { 0x05c7, 0x05c7 }, { 0x05f4, 0x05f4 },
	{ 0x0600, 0x0605 }, { 0x0610, 0x061a }, { 0x061c, 0x061c }, { 0x0640, 0x0640 },
	{ 0x064b, 0x065f }, { 0x0670, 0x0670 }, { 0x06d6, 0x06dd }, { 0x06df, 0x06e8 },
	{ 0x06ea, 0x06ed }, { 0x070f, 0x070f }, { 0x0711, 0x0711 }, { 0x0730, 0x074a },
	{ 0x07a6, 0x07b0 }, { 0x07eb, 0x07f5 }, { 0x07fa, 0x07fa }, { 0x07fd, 0x07fd },
	{ 0x0816, 0x082d }, { 0x0859, 0x085b }, { 0x0888, 0x0888 }, { 0x0890, 0x0891 },
	{ 0x0898, 0x089f }, { 0x08c9, 0x0902 }, { 0x093a, 0x093a }, { 0x093c, 0x093c },
	{ 0x0941, 0x0948 }, { 0x094d, 0x094d }, { 0x0951, 0x0957 }, { 0x0962, 0x0963 },
	{ 0x0971, 0x0971 }, { 0x0981, 0x0981 }, { 0x09bc, 0x09bc }, { 0x09c1, 0x09c4 },
	{ 0x09cd, 0x09cd }, { 0x09e2, 0x09e3 }, { 0x09fe, 0x09fe }, { 0x0a01, 0x0a02 },
	{ 0x0a3c, 0x0a3c }, { 0x0a41, 0x0a42 }, { 0x0a47, 0x0a48 }, { 0x0a4b, 0x0a4d },
	{ 0x0a51, 0x0a51 }, { 0x0a70, 0x0a71 }, { 0x0a75, 0x0a75 }, { 0x0a81, 0x0a82 },
	{ 0x0abc, 0x0abc }, { 0x0ac1, 0x0ac5 }, { 0x0ac7, 0x0ac8 }, { 0x0acd, 0x0acd },
	{ 0x0ae2, 0x0ae3 }, { 0x0afa, 0x0aff }, { 0x0b01, 0x0b01 }, { 0x0b3c, 0x0b3c },
	{ 0x0b3f, 0x0b3f }, { 0x0b41, 0x0b44 }, { 0x0b4d, 0x0b4d }, { 0x0b55, 0x0b56 },
	{ 0x0b62, 0x0b63 }, { 0x0b82, 0x0b82 }, { 0x0bc0, 0x0bc0 }, { 0x0bcd, 0x0bcd },
	{ 0x0c00, 0x0c00 }, { 0x0c04, 0x0c04 }, { 0x0c3c, 0x0c3c }, { 0x0c3e, 0x0c40 },
	{ 0x0c46, 0x0c48 }, { 0x0c4a, 0x0c4d }, { 0x0c55, 0x0c56 }, { 0x0c62, 0x0c63 },
	{ 0x0c81, 0x0c81 }, { 0x0cbc, 0x0cbc }, { 0x0cbf, 0x0cbf }, { 0x0cc6, 0x0cc6 },
	{ 0x0ccc, 0x0ccd }, { 0x0ce2, 0x0ce3 }, { 0x0d00, 0x0d01 }, { 0x0d3b, 0x0d3c },
	{ 0x0d41, 0x0d44 }, { 0x0d4d, 0x0d4d }, { 0x0d62, 0x0d63 }, { 0x0d81, 0x0d81 },
	{ 0x0dca, 0x0dca }, { 0x0dd2, 0x0dd4 }, { 0x0dd6, 0x0dd6 }, { 0x0e31, 0x0e31 },
	{ 0x0e34, 0x0e3a }, { 0x0e46, 0x0e4e }, { 0x0eb1, 0x0eb1 }, { 0x0eb4, 0x0ebc },
	{ 0x0ec6, 0x0ec6 }, { 0x0ec8, 0x0ecd }, { 0x0f18, 0x0f19 }, { 0x0f35, 0x0f35 },
	{ 0x0f37, 0x0f37 }, { 0x0f39, 0x0f39 }, { 0x0f71, 0x0f7e }, { 0x0f80, 0x0f84 },
	{ 0x0f86, 0x0f87 }, { 0x0f8d, 0x0f97 }, { 0x0f99, 0x0fbc }, { 0x0fc6, 0x0fc6 },
	{ 0x102d, 0x1030 }, { 0x1032, 0x1037 }, { 0x1039, 0x103a }, { 0x103d, 0x103e },
	{ 0x1058, 0x1059 }, { 0x105e, 0x1060 }, { 0x1071, 0x1074 }, { 0x1082, 0x1082 },
	{ 0x1085, 0x1086 }, { 0x108d, 0x108d }, { 0x109d, 0x109d }, { 0x10fc, 0x10fc },
	{ 0x135d, 0x135f }, { 0x1712, 0x1714 }, { 0x1732, 0x1733 }, { 0x1752, 0x1753 },
	{ 0x1772, 0x1773 }, { 0x17b4, 0x17b5 }, { 0x17b7, 0x17bd }, { 0x17c6, 0x17c6 },
	{ 0x17c9, 0x17d3 }, { 0x17d7, 0x17d7 }, { 0x17dd, 0x17dd }, { 0x180b, 0x180f },
	{ 0x1843, 0x1843 }, { 0x1885, 0x1886 }, { 0x18a9, 0x18a9 }, { 0x1920, 0x1922 },
	{ 0x1927, 0x1928 }, { 0x1932, 0x1932 }, { 0x1939, 0x193b }, { 0x1a17, 0x1a18 },
	{ 0x1a1b, 0x1a1b }, { 0x1a56, 0x1a56 }, { 0x1a58, 0x1a5e }, { 0x1a60, 0x1a60 },
	{ 0x1a62, 0x1a62 }, { 0x1a65, 0x1a6c }, { 0x1a73, 0x1a7c }, { 0x1a7f, 0x1a7f },
	{ 0x1aa7, 0x1aa7 }, { 0x1ab0, 0x1ace }, { 0x1b00, 0x1b03 }, { 0x1b34, 0x1b34 },
	{ 0x1b36, 0x1b3a }, { 0x1b3c, 0x1b3c }, { 0x1b42, 0x1b42 }, { 0x1b6b, 0x1b73 },
	{ 0x1b80, 0x1b81 }, { 0x1ba2, 0x1ba5 }, { 0x1ba8, 0x1ba9 }, { 0x1bab, 0x1bad },
	{ 0x1be6, 0x1be6 }, { 0x1be8, 0x1be9 }, { 0x1bed, 0x1bed }, { 0x1bef, 0x1bf1 },
	{ 0x1c2c, 0x1c33 }, { 0x1c36, 0x1c37 }, { 0x1c78, 0x1c7d }, { 0x1cd0, 0x1cd2 },
	{ 0x1cd4, 0x1ce0 }, { 0x1ce2, 0x1ce8 }, { 0x1ced, 0x1ced }, { 0x1cf4, 0x1cf4 },
	{ 0x1cf8, 0x1cf9 }, { 0x1d2c, 0x1d6a }, { 0x1d78, 0x1d78 }, { 0x1d9b, 0x1dff },
	{ 0x1fbd, 0x1fbd }, { 0x1fbf, 0x1fc1 }, { 0x1fcd, 0x1fcf }, { 0x1fdd, 0x1fdf },
	{ 0x1fed, 0x1fef }, { 0x1ffd, 0x1ffe }, { 0x200b, 0x200f }, { 0x2018, 0x2019 },
	{ 0x2024, 0x2024 }, { 0x2027, 0x2027 }, { 0x202a, 0x202e }, { 0x2060, 0x2064 },
	{ 0x2066, 0x206f }, { 0x2071, 0x2071 }, { 0x207f, 0x207f }, { 0x2090, 0x209c },
	{ 0x20d0, 0x20f0 }, { 0x2c7c, 0x2c7d }, { 0x2cef, 0x2cf1 }, { 0x2d6f, 0x2d6f },
	{ 0x2d7f, 0x2d7f }, { 0x2de0, 0x2dff }, { 0x2e2f, 0x2e2f }, { 0x3005, 0x3005 },
	{ 0x302a, 0x302d }, { 0x3031, 0x3035 }, { 0x303b, 0x303b }, { 0x3099, 0x309e },
	{ 0x30fc, 0x30fe }, { 0xa015, 0xa015 }, { 0xa4f8, 0xa4fd }, { 0xa60c, 0xa60c },
	{ 0xa66f, 0xa672 }, { 0xa674, 0xa67d }, { 0xa67f, 0xa67f }, { 0xa69c, 0xa69f },
	{ 0xa6f0, 0xa6f1 }, { 0xa700, 0xa721 }, { 0xa770, 0xa770 }, { 0xa788, 0xa78a },
	{ 0xa7f2, 0xa7f4 }, { 0xa7f8, 0xa7f9 }, { 0xa802, 0xa802 }, { 0xa806, 0xa806 },
	{ 0xa80b, 0xa80b }, { 0xa825, 0xa826 }, { 0xa82c, 0xa82c }, { 0xa8c4, 0xa8c5 },
	{ 0xa8e0, 0xa8f1 }, { 0xa8ff, 0xa8ff }, { 0xa926, 0xa92d }, { 0xa947, 0xa951 },
	{ 0xa980, 0xa982 }, { 0xa9b3, 0xa9b3 }, { 0xa9b6, 0xa9b9 }, { 0xa9bc, 0xa9bd },
	{ 0xa9cf, 0xa9cf }, { 0xa9e5, 0xa9e6 }, { 0xaa29, 0xaa2e }, { 0xaa31, 0xaa32 },
	{ 0xaa35, 0xaa36 }, { 0xaa43, 0xaa43 }, { 0xaa4c, 0xaa4c }, { 0xaa70, 0xaa70 },
	{ 0xaa7c, 0xaa7c }, { 0xaab0, 0xaab0 }, { 0xaab2, 0xaab4 }, { 0xaab7, 0xaab8 },
	{ 0xaabe, 0xaabf }, { 0xaac1, 0xaac1 }, { 0xaadd, 0xaadd }, { 0xaaec, 0xaaed },
	{ 0xaaf3, 0xaaf4 }, { 0xaaf6, 0xaaf6 }, { 0xab5b, 0xab5f }, { 0xab69, 0xab6b },
	{ 0xabe5, 0xabe5 }, { 0xabe8, 0xabe8 }, { 0xabed, 0xabed }, { 0xfb1e, 0xfb1e },
	{ 0xfbb2, 0xfbc2 }, { 0xfe00, 0xfe0f }, { 0xfe13, 0xfe13 }, { 0xfe20, 0xfe2f },
	{ 0xfe52, 0xfe52 }, { 0xfe55, 0xfe55 }, { 0xfeff, 0xfeff }, { 0xff07, 0xff07 },
	{ 0xff0e, 0xff0e }, { 0xff1a, 0xff1a }, { 0xff3e, 0xff3e }, { 0xff40, 0xff40 },
	{ 0xff70, 0xff70 }, { 0xff9e, 0xff9f }, { 0xffe3, 0xffe3 }, { 0xfff9, 0xfffb },
	{ 0x101fd, 0x101fd }, { 0x102e0, 0x102e0 }, { 0x10376, 0x1037a }, { 0x10780, 0x10785 },
	{ 0x10787, 0x107b0 }, { 0x107b2, 0x107ba }, { 0x10a01, 0x10a03 }, { 0x10a05, 0x10a06 },
	{ 0x10a0c, 0x10a0f }, { 0x10a38, 0x10a3a }, { 0x10a3f, 0x10a3f }, { 0x10ae5, 0x10ae6 },
	{ 0x10d24, 0x10d27 }, { 0x10eab, 0x10eac }, { 0x10f46, 0x10f50 }, { 0x10f82, 0x10f85 },
	{ 0x11001, 0x11001 }, { 0x11038, 0x11046 }, { 0x11070, 0x11070 }, { 0x11073, 0x11074 },
	{ 0x1107f, 0x11081 }, { 0x110b3, 0x110b6 }, { 0x110b9, 0x110ba }, { 0x110bd, 0x110bd },
	{ 0x110c2, 0x110c2 }, { 0x110cd, 0x110cd }, { 0x11100, 0x11102 }, { 0x11127, 0x1112b },
	{ 0x1112d, 0x11134 }, { 0x11173, 0x11173 }, { 0x11180, 0x11181 }, { 0x111b6, 0x111be },
	{ 0x111c9, 0x111cc }, { 0x111cf, 0x111cf }, { 0x1122f, 0x11231 }, { 0x11234, 0x11234 },
	{ 0x11236, 0x11237 }, { 0x1123e, 0x1123e }, { 0x112df, 0x112df }, { 0x112e3, 0x112ea },
	{ 0x11300, 0x11301 }, { 0x1133b, 0x1133c }, { 0x11340, 0x11340 }, { 0x11366, 0x1136c },
	{ 0x11370, 0x11374 }, { 0x11438, 0x1143f }, { 0x11442, 0x11444 }, { 0x11446, 0x11446 },
	{ 0x1145e, 0x1145e }, { 0x114b3, 0x114b8 }, { 0x114ba, 0x114ba }, { 0x114bf, 0x114c0 },
	{ 0x114c2, 0x114c3 }, { 0x115b2, 0x115b5 }, { 0x115bc, 0x115bd }, { 0x115bf, 0x115c0 },
	{ 0x115dc, 0x115dd }, { 0x11633, 0x1163a }, { 0x1163d, 0x1163d }, { 0x1163f, 0x11640 },
	{ 0x116ab, 0x116ab }, { 0x116ad, 0x116ad }, { 0x116b0, 0x116b5 }, { 0x116b7, 0x116b7 },
	{ 0x1171d, 0x1171f }, { 0x11722, 0x11725 }, { 0x11727, 0x1172b }, { 0x1182f, 0x11837 },
	{ 0x11839, 0x1183a }, { 0x1193b, 0x1193c }, { 0x1193e, 0x1193e }, { 0x11943, 0x11943 },
	{ 0x119d4, 0x119d7 }, { 0x119da, 0x119db }, { 0x119e0, 0x119e0 }, { 0x11a01, 0x11a0a },
	{ 0x11a33, 0x11a38 }, { 0x11a3b, 0x11a3e }, { 0x11a47, 0x11a47 }, { 0x11a51, 0x11a56 },
	{ 0x11a59, 0x11a5b }, { 0x11a8a, 0x11a96 }, { 0x11a98, 0x11a99 }, { 0x11c30, 0x11c36 },
	{ 0x11c38, 0x11c3d }, { 0x11c3f, 0x11c3f }, { 0x11c92, 0x11ca7 }, { 0x11caa, 0x11cb0 },
	{ 0x11cb2, 0x11cb3 }, { 0x11cb5, 0x11cb6 }, { 0x11d31, 0x11d36 }, { 0x11d3a, 0x11d3a },
	{ 0x11d3c, 0x11d3d }, { 0x11d3f, 0x11d45 }, { 0x11d47, 0x11d47 }, { 0x11d90, 0x11d91 },
	{ 0x11d95, 0x11d95 }, { 0x11d97, 0x11d97 }, { 0x11ef3, 0x11ef4 }, { 0x13430, 0x13438 },
	{ 0x16af0, 0x16af4 }, { 0x16b30, 0x16b36 }, { 0x16b40, 0x16b43 }, { 0x16f4f, 0x16f4f },
	{ 0x16f8f, 0x16f9f }, { 0x16fe0, 0x16fe1 }, { 0x16fe3, 0x16fe4 }, { 0x1aff0, 0x1aff3 },
	{ 0x1aff5, 0x1affb }, { 0x1affd, 0x1affe }, { 0x1bc9d, 0x1bc9e }, { 0x1bca0, 0x1bca3 },
	{ 0x1cf00, 0x1cf2d }, { 0x1cf30, 0x1cf46 }, { 0x1d167, 0x1d169 }, { 0x1d173, 0x1d182 },
	{ 0x1d185, 0x1d18b }, { 0x1d1aa, 0x1d1ad }, { 0x1d242, 0x1d244 }, { 0x1da00, 0x1da36 },
	{ 0x1da3b, 0x1da6c }, { 0x1da75, 0x1da75 }, { 0x1da84, 0x1da84 }, { 0x1da9b, 0x1da9f },
	{ 0x1daa1, 0x1daaf }, { 0x1e000, 0x1e006 }, { 0x1e008, 0x1e018 }, { 0x1e01b, 0x1e021 },
	{ 0x1e023, 0x1e024 }, { 0x1e026, 0x1e02a }, { 0x1e130, 0x1e13d }, { 0x1e2ae, 0x1e2ae },
	{ 0x1e2ec, 0x1e2ef }, { 0x1e8d0, 0x1e8d6 }, { 0x1e944, 0x1e94b }, { 0x1f3fb, 0x1f3ff },
	{ 0xe0001, 0xe0001 }, { 0xe0020, 0xe007f }, { 0xe0100, 0xe01ef },
};

static const struct cp_range cased_ranges[] = {
	{ 0x0041, 0x005a }, { 0x0061, 0x007a }, { 0x00aa, 0x00aa }, { 0x00b5, 0x00b5 },
	{ 0x00ba, 0x00ba }, { 0x00c0, 0x00d6 }, { 0x00d8, 0x00f6 }, { 0x00f8, 0x01ba },
	{ 0x01bc, 0x01bf }, { 0x01c4, 0x0293 }, { 0x0295, 0x02af }, { 0x0370, 0x0373 },
	{ 0x0376, 0x0377 }, { 0x037b, 0x037d }, { 0x037f, 0x037f }, { 0x0386, 0x0386 },
	{ 0x0388, 0x038a }, { 0x038c, 0x038c }, { 0x038e, 0x03a1 }, { 0x03a3, 0x03f5 },
	{ 0x03f7, 0x0481 }, { 0x048a, 0x052f }, { 0x0531, 0x0556 }, { 0x0560, 0x0588 },
	{ 0x10a0, 0x10c5 }, { 0x10c7, 0x10c7 }, { 0x10cd, 0x10cd }, { 0x10d0, 0x10fa },
	{ 0x10fd, 0x10ff }, { 0x13a0, 0x13f5 }, { 0x13f8, 0x13fd }, { 0x1c80, 0x1c88 },
	{ 0x1c90, 0x1cba }, { 0x1cbd, 0x1cbf }, { 0x1d00, 0x1d2b }, { 0x1d6b, 0x1d77 },
	{ 0x1d79, 0x1d9a }, { 0x1e00, 0x1f15 }, { 0x1f18, 0x1f1d }, { 0x1f20, 0x1f45 },
	{ 0x1f48, 0x1f4d }, { 0x1f50, 0x1f57 }, { 0x1f59, 0x1f59 }, { 0x1f5b, 0x1f5b },
	{ 0x1f5d, 0x1f5d }, { 0x1f5f, 0x1f7d }, { 0x1f80, 0x1fb4 }, { 0x1fb6, 0x1fbc },
	{ 0x1fbe, 0x1fbe }, { 0x1fc2, 0x1fc4 }, { 0x1fc6, 0x1fcc }, { 0x1fd0, 0x1fd3 },
	{ 0x1fd6, 0x1fdb }, { 0x1fe0, 0x1fec }, { 0x1ff2, 0x1ff4 }, { 0x1ff6, 0x1ffc },
	{ 0x2102, 0x2102 }, { 0x2107, 0x2107 }, { 0x210a, 0x2113 }, { 0x2115, 0x2115 },
	{ 0x2119, 0x211d }, { 0x2124, 0x2124 }, { 0x2126, 0x2126 }, { 0x2128, 0x2128 },
	{ 0x212a, 0x212d }, { 0x212f, 0x2134 }, { 0x2139, 0x2139 }, { 0x213c, 0x213f },
	{ 0x2145, 0x2149 }, { 0x214e, 0x214e }, { 0x2160, 0x217f }, { 0x2183, 0x2184 },
	{ 0x24b6, 0x24e9 }, { 0x2c00, 0x2c7b }, { 0x2c7e, 0x2ce4 }, { 0x2ceb, 0x2cee },
	{ 0x2cf2, 0x2cf3 }, { 0x2d00, 0x2d25 }, { 0x2d27, 0x2d27 }, { 0x2d2d, 0x2d2d },
	{ 0xa640, 0xa66d }, { 0xa680, 0xa69b }, { 0xa722, 0xa76f }, { 0xa771, 0xa787 },
	{ 0xa78b, 0xa78e }, { 0xa790, 0xa7ca }, { 0xa7d0, 0xa7d1 }, { 0xa7d3, 0xa7d3 },
	{ 0xa7d5, 0xa7d9 }, { 0xa7f5, 0xa7f6 }, { 0xa7fa, 0xa7fa }, { 0xab30, 0xab5a },
	{ 0xab60, 0xab68 }, { 0xab70, 0xabbf }, { 0xfb00, 0xfb06 }, { 0xfb13, 0xfb17 },
	{ 0xff21, 0xff3a }, { 0xff41, 0xff5a }, { 0x10400, 0x1044f }, { 0x104b0, 0x104d3 },
	{ 0x104d8, 0x104fb }, { 0x10570, 0x1057a }, { 0x1057c, 0x1058a }, { 0x1058c, 0x10592 },
	{ 0x10594, 0x10595 }, { 0x10597, 0x105a1 }, { 0x105a3, 0x105b1 }, { 0x105b3, 0x105b9 },
	{ 0x105bb, 0x105bc }, { 0x10c80, 0x10cb2 }, { 0x10cc0, 0x10cf2 }, { 0x118a0, 0x118df },
	{ 0x16e40, 0x16e7f }, { 0x1d400, 0x1d454 }, { 0x1d456, 0x1d49c }, { 0x1d49e, 0x1d49f },
	{ 0x1d4a2, 0x1d4a2 }, { 0x1d4a5, 0x1d4a6 }, { 0x1d4a9, 0x1d4ac }, { 0x1d4ae, 0x1d4b9 },
	{ 0x1d4bb, 0x1d4bb }, { 0x1d4bd, 0x1d4c3 }, { 0x1d4c5, 0x1d505 }, { 0x1d507, 0x1d50a },
	{ 0x1d50d, 0x1d514 }, { 0x1d516, 0x1d51c }, { 0x1d51e, 0x1d539 }, { 0x1d53b, 0x1d53e },
	{ 0x1d540, 0x1d544 }, { 0x1d546, 0x1d546 }, { 0x1d54a, 0x1d550 }, { 0x1d552, 0x1d6a5 },
	{ 0x1d6a8, 0x1d6c0 }, { 0x1d6c2, 0x1d6da }, { 0x1d6dc, 0x1d6fa }, { 0x1d6fc, 0x1d714 },
	{ 0x1d716, 0x1d734 }, { 0x1d736, 0x1d74e }, { 0x1d750, 0x1d76e }, { 0x1d770, 0x1d788 },
	{ 0x1d78a, 0x1d7a8 }, { 0x1d7aa, 0x1d7c2 }, { 0x1d7c4, 0x1d7cb }, { 0x1df00, 0x1df09 },
	{ 0x1df0b, 0x1df1e }, { 0x1e900, 0x1e943 }, { 0x1f130, 0x1f149 }, { 0x1f150, 0x1f169 },
	{ 0x1f170, 0x1f189 },
};
/* END GENERATED TABLES */

/* A byte that is not part of valid UTF-8, kept as it is (as surrogateescape does). */
#define RAW_BYTE 0x80000000u

static int in_ranges(const struct cp_range *r, size_t n, uint32_t c)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c < r[mid].first)
			hi = mid;
		else if (c > r[mid].last)
			lo = mid + 1;
		else
			return 1;
	}
	return 0;
}

static uint32_t lower_simple(uint32_t c)
{
	size_t lo = 0, hi = ARRAY_SIZE(lower_runs);

	/* the last run starting at or before c */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (lower_runs[mid].first <= c)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo) {
		const struct lower_run *r = &lower_runs[lo - 1];
		uint32_t off = c - r->first;

		if (off % r->stride == 0 && off / r->stride < r->count)
			return (uint32_t)((int32_t)c + r->delta);
	}
	return c;
}

static void utf8_add(struct buf *out, uint32_t c)
{
	if (c & RAW_BYTE)
		buf_addch(out, (int)(c & 0xff));
	else
		utf8_encode(out, c);
}

static int case_ignorable(uint32_t c)
{
	return !(c & RAW_BYTE) && in_ranges(case_ignorable_ranges,
					    ARRAY_SIZE(case_ignorable_ranges), c);
}

static int cased(uint32_t c)
{
	return !(c & RAW_BYTE) && in_ranges(cased_ranges, ARRAY_SIZE(cased_ranges), c);
}

/*
 * CPython's handle_capital_sigma(): U+03A3 lowers to final sigma when a
 * cased letter comes before it and none after it, case-ignorable
 * characters in between not counting.
 */
static uint32_t lower_sigma(const uint32_t *cps, size_t n, size_t i)
{
	size_t j = i;
	int final;

	while (j > 0 && case_ignorable(cps[j - 1]))
		j--;
	final = j > 0 && cased(cps[j - 1]);
	if (final) {
		for (j = i + 1; j < n && case_ignorable(cps[j]); j++)
			;
		final = j == n || !cased(cps[j]);
	}
	return final ? 0x3c2 : 0x3c3;
}

/* Append `s` (`len` bytes) lower-cased as Python's str.lower() would. */
static void lower_add(struct buf *out, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t *cps;
	size_t i, n = 0;

	for (i = 0; i < len && u[i] < 0x80; i++)
		;
	if (i == len) {
		/* the usual case: ASCII */
		buf_grow(out, len);
		for (i = 0; i < len; i++)
			buf_addch(out, u[i] >= 'A' && u[i] <= 'Z' ? u[i] + ('a' - 'A') : u[i]);
		return;
	}
	cps = xmalloc(len * sizeof(*cps));
	for (i = 0; i < len;) {
		size_t k = utf8_decode((const char *)u + i, len - i, &cps[n]);

		if (!k) {
			cps[n] = RAW_BYTE | u[i];
			k = 1;
		}
		n++;
		i += k;
	}
	for (i = 0; i < n; i++) {
		uint32_t c = cps[i];

		if (c & RAW_BYTE) {
			utf8_add(out, c);
		} else if (c == 0x3a3) {
			utf8_add(out, lower_sigma(cps, n, i));
		} else if (c == 0x130) {
			/* the one full mapping to two code points */
			utf8_add(out, 'i');
			utf8_add(out, 0x307);
		} else {
			utf8_add(out, lower_simple(c));
		}
	}
	free(cps);
}

/* ---- names ------------------------------------------------------------ */

void policy_base_name(struct buf *out, const char *arg)
{
	size_t end = strlen(arg), start;
	size_t from = out->len;

	/*
	 * Path(arg).name: the last component that is neither empty nor ".";
	 * "" when there is none ("/", ".", "./").
	 */
	for (;;) {
		while (end > 0 && arg[end - 1] == '/')
			end--;
		start = end;
		while (start > 0 && arg[start - 1] != '/')
			start--;
		if (end - start == 1 && arg[start] == '.') {
			end = start;
			continue;
		}
		break;
	}
	lower_add(out, arg + start, end - start);
	/* str.removesuffix(".exe"): once */
	if (out->len - from >= 4 && !memcmp(out->buf + out->len - 4, ".exe", 4))
		buf_setlen(out, out->len - 4);
}

static int digit_or_dot(char c)
{
	return (c >= '0' && c <= '9') || c == '.';
}

void policy_norm_name(struct buf *out, const char *base)
{
	size_t len = strlen(base), end = len, start;

	/* Python's "$" also matches just before a final newline. */
	if (end > 0 && base[end - 1] == '\n')
		end--;
	start = end;
	while (start > 0 && digit_or_dot(base[start - 1]))
		start--;
	if (start == end && end != len) {
		/* nothing before the newline: "$" at the very end finds nothing either */
		buf_add(out, base, len);
		return;
	}
	buf_add(out, base, start);
	buf_add(out, base + end, len - end);
}

/* ---- decisions -------------------------------------------------------- */

static int listed(const struct strvec *list, const char *const *defaults, const char *base,
		  const char *norm)
{
	size_t i;

	if (!list->nr) {
		for (i = 0; defaults[i]; i++)
			if (!strcmp(defaults[i], base) || !strcmp(defaults[i], norm))
				return 1;
		return 0;
	}
	for (i = 0; i < list->nr; i++)
		if (!strcmp(list->v[i], base) || !strcmp(list->v[i], norm))
			return 1;
	return 0;
}

/* The seed's check() for one program, from its two names. */
static enum policy_decision decide(const struct policy *p, const char *base, const char *norm,
				   struct buf *reason)
{
	if (listed(&p->denied, policy_default_denied, base, norm) ||
	    (!p->denied.nr && listed(&p->denied, policy_extra_denied, base, norm))) {
		if (reason)
			buf_addf(reason, "Command '%s' is in the deny list", base);
		return POLICY_DENY;
	}
	if (p->allowed.nr && !listed(&p->allowed, NULL, base, norm)) {
		if (reason)
			buf_addf(reason, "Command '%s' is not in the allowlist", base);
		return POLICY_DENY;
	}
	if (listed(&p->network, policy_default_network, base, norm) && !p->network_allowed) {
		if (reason)
			buf_addf(reason, "Command '%s' may access the network", base);
		return POLICY_APPROVAL;
	}
	return POLICY_ALLOW;
}

struct names {
	struct buf base, norm;
};

static void names_set(struct names *n, const char *arg)
{
	buf_reset(&n->base);
	buf_reset(&n->norm);
	policy_base_name(&n->base, arg ? arg : "");
	policy_norm_name(&n->norm, n->base.buf);
}

enum policy_decision policy_check_name(const struct policy *p, const char *arg,
				       struct buf *reason)
{
	struct names n = { BUF_INIT, BUF_INIT };
	enum policy_decision d;

	names_set(&n, arg);
	d = decide(p, n.base.buf, n.norm.buf, reason);
	buf_release(&n.base);
	buf_release(&n.norm);
	return d;
}

/* ---- wrappers --------------------------------------------------------- */

/*
 * A wrapper runs a program named in its arguments. next() returns the
 * index of that program in argv, or argc when the wrapper runs none (its
 * options only print something); for `exec -a NAME` it also sets `*alias`,
 * the argv[0] the program will see.
 */
struct wrapper {
	const char *name;
	int prefix;		/* any name starting with `name` (multi-call binaries) */
	size_t (*next)(const char *const *argv, size_t argc, size_t i, const char **alias);
};

static const char *arg_at(const char *const *argv, size_t i)
{
	return argv[i] ? argv[i] : "";
}

/*
 * busybox [--help [APPLET] | --list[-full] | --install [-s] [DIR] |
 * --show SCRIPT | APPLET [ARGS]]: the applet is argv[1], by its last path
 * component (appletlib.c busybox_main).
 */
static size_t busybox_next(const char *const *argv, size_t argc, size_t i, const char **alias)
{
	const char *a;

	(void)alias;
	if (i + 1 >= argc)
		return argc;
	a = arg_at(argv, i + 1);
	if (!strcmp(a, "--help") || !strncmp(a, "--list", 6) || !strcmp(a, "--install") ||
	    !strcmp(a, "--show"))
		return argc;
	return i + 1;
}

/* toybox [--help | --long | --version | COMMAND [ARGS]] (main.c toybox_main). */
static size_t toybox_next(const char *const *argv, size_t argc, size_t i, const char **alias)
{
	const char *a;

	(void)alias;
	if (i + 1 >= argc)
		return argc;
	a = arg_at(argv, i + 1);
	if (!strcmp(a, "--help") || !strcmp(a, "--long") || !strcmp(a, "--version"))
		return argc;
	return i + 1;
}

/*
 * command [-pVv] [--] NAME [ARGS]: -v and -V only describe NAME. Unknown
 * options are skipped like known ones: the shell would refuse them, so
 * judging NAME anyway can only be stricter.
 */
static size_t command_next(const char *const *argv, size_t argc, size_t i, const char **alias)
{
	size_t j;
	int describe = 0;

	(void)alias;
	for (j = i + 1; j < argc; j++) {
		const char *a = arg_at(argv, j);

		if (!strcmp(a, "--")) {
			j++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		if (strpbrk(a + 1, "vV"))
			describe = 1;
	}
	return describe ? argc : j;
}

/*
 * exec [-cl] [-a NAME] [--] [PROGRAM [ARGS]] (bash; zsh and ksh alike):
 * options may be grouped ("-cla NAME"), and -a's value may be attached
 * ("-aNAME").
 */
static size_t exec_next(const char *const *argv, size_t argc, size_t i, const char **alias)
{
	size_t j;

	for (j = i + 1; j < argc; j++) {
		const char *a = arg_at(argv, j), *o;

		if (!strcmp(a, "--")) {
			j++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		for (o = a + 1; *o; o++) {
			if (*o != 'a')
				continue;
			if (o[1]) {
				*alias = o + 1;
			} else if (j + 1 < argc) {
				*alias = arg_at(argv, ++j);
			} else {
				return argc;	/* "-a" without NAME: the shell refuses */
			}
			break;
		}
	}
	return j;
}

/* builtin [--] [SHELL-BUILTIN [ARGS]]: no options but "--". */
static size_t builtin_next(const char *const *argv, size_t argc, size_t i, const char **alias)
{
	(void)alias;
	if (i + 1 < argc && !strcmp(arg_at(argv, i + 1), "--"))
		return i + 2;
	return i + 1;
}

static const struct wrapper wrappers[] = {
	{ "busybox", 1, busybox_next },
	{ "toybox", 1, toybox_next },
	{ "command", 0, command_next },
	{ "exec", 0, exec_next },
	{ "builtin", 0, builtin_next },
};

static int wrapper_matches(const struct wrapper *w, const char *name)
{
	if (w->prefix)
		return !strncmp(name, w->name, strlen(w->name));
	return !strcmp(name, w->name);
}

static const struct wrapper *wrapper_for(const struct names *n)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(wrappers); i++)
		if (wrapper_matches(&wrappers[i], n->base.buf) ||
		    wrapper_matches(&wrappers[i], n->norm.buf))
			return &wrappers[i];
	return NULL;
}

/*
 * The answer so far over a chain of programs (struct policy_verdict): the
 * first of the most severe.
 */
static int severity(enum policy_decision d);

/*
 * git's subcommand in argv[i + 1...] (git is argv[i]), after its global
 * options (git.c handle_options()); "" when there is none. `*alias` is set
 * when `-c alias.NAME=...` defines an alias on the command line, whose
 * expansion could be anything.
 */
static const char *git_subcommand(const char *const *argv, size_t argc, size_t i, int *alias)
{
	static const char *const with_arg[] = {
		"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix",
		"--config-env", "--exec-path", "--list-cmds", NULL,
	};
	size_t k;

	*alias = 0;
	for (i++; i < argc; i++) {
		const char *a = arg_at(argv, i);
		int takes = 0;

		if (a[0] != '-')
			return a;
		if (!strcmp(a, "--"))
			return i + 1 < argc ? arg_at(argv, i + 1) : "";
		for (k = 0; with_arg[k]; k++)
			if (!strcmp(a, with_arg[k]))
				takes = 1;
		if (!strncmp(a, "-c", 2) && (a[2] ? !strncasecmp(a + 2, "alias.", 6) :
		    i + 1 < argc && !strncasecmp(arg_at(argv, i + 1), "alias.", 6)))
			*alias = 1;
		if (!strncmp(a, "--config-env=alias.", 19) || (!strcmp(a, "--config-env") &&
		    i + 1 < argc && !strncasecmp(arg_at(argv, i + 1), "alias.", 6)))
			*alias = 1;
		if (takes && strcmp(a, "--exec-path") && strcmp(a, "--list-cmds"))
			i++;
	}
	return "";
}

/*
 * `git clean` deletes untracked files, ignored ones too with -x, which no
 * checkpoint holds (they are ignored): it needs a person's yes in every
 * mode. So does a command-line alias, which could expand to it.
 */
static void judge_git(struct policy_verdict *v, const struct names *n, const char *const *argv,
		      size_t argc, size_t i)
{
	const char *sub;
	int alias;

	if (strcmp(n->base.buf, "git") && strcmp(n->norm.buf, "git"))
		return;
	sub = git_subcommand(argv, argc, i, &alias);
	if (strcmp(sub, "clean") && !alias)
		return;
	v->always_ask = 1;
	if (severity(POLICY_APPROVAL) > severity(v->decision)) {
		v->decision = POLICY_APPROVAL;
		buf_reset(&v->reason);
		if (alias)
			buf_addstr(&v->reason, "Command 'git' defines an alias with -c, which could "
				   "run anything; it needs approval in every mode");
		else
			buf_addstr(&v->reason, "Command 'git clean' deletes untracked and ignored "
				   "files that no checkpoint holds; it needs approval in every mode");
	}
}

static int severity(enum policy_decision d)
{
	return d == POLICY_DENY ? 2 : d == POLICY_APPROVAL ? 1 : 0;
}

static void judge(const struct policy *p, struct policy_verdict *v, const struct names *n,
		  const char *how, const char *via)
{
	struct buf r = BUF_INIT;
	enum policy_decision d = decide(p, n->base.buf, n->norm.buf, &r);

	if (listed(&p->network, policy_default_network, n->base.buf, n->norm.buf))
		v->network = 1;
	if (severity(d) > severity(v->decision)) {
		v->decision = d;
		buf_reset(&v->reason);
		buf_addbuf(&v->reason, &r);
		if (via)
			buf_addf(&v->reason, " (%s '%s')", how, via);
	}
	buf_release(&r);
}

void policy_verdict_release(struct policy_verdict *v)
{
	buf_release(&v->reason);
	v->decision = POLICY_ALLOW;
	v->always_ask = 0;
	v->network = 0;
}

enum policy_decision policy_check(struct policy_verdict *out, const struct policy *p,
				  const char *const *argv, size_t argc)
{
	struct policy_verdict v = POLICY_VERDICT_INIT;
	struct names n = { BUF_INIT, BUF_INIT }, an = { BUF_INIT, BUF_INIT };
	struct buf via = BUF_INIT;
	const char *alias = NULL;
	size_t i = 0;

	if (!argc) {
		v.decision = POLICY_DENY;
		buf_addstr(&v.reason, "Empty command line");
		*out = v;
		return v.decision;
	}
	/*
	 * Each step judges one program, and the argv[0] it was given by
	 * `exec -a`, then follows a wrapper to the program it runs. Every step
	 * moves forward in argv, so the walk ends.
	 */
	for (;;) {
		const struct wrapper *w;

		names_set(&n, arg_at(argv, i));
		judge(p, &v, &n, "run by", i ? via.buf : NULL);
		if (v.decision != POLICY_DENY)
			judge_git(&v, &n, argv, argc, i);
		w = wrapper_for(&n);
		if (alias) {
			/* a multi-call binary dispatches on the argv[0] it is given */
			names_set(&an, alias);
			judge(p, &v, &an, "argv[0] set by", "exec -a");
			if (!w)
				w = wrapper_for(&an);
			alias = NULL;
		}
		if (!w || v.decision == POLICY_DENY)
			break;
		buf_reset(&via);
		buf_addbuf(&via, &n.base);
		i = w->next(argv, argc, i, &alias);
		if (i >= argc)
			break;
	}
	/* what the walk saw on the way, kept only where the decision uses it */
	v.always_ask = v.always_ask && v.decision == POLICY_APPROVAL;
	v.network = v.network && v.decision != POLICY_DENY;
	buf_release(&n.base);
	buf_release(&n.norm);
	buf_release(&an.base);
	buf_release(&an.norm);
	buf_release(&via);
	*out = v;
	return v.decision;
}

/* ---- set-up ----------------------------------------------------------- */

void policy_init_defaults(struct policy *p)
{
	struct policy d = POLICY_INIT;

	strvec_pushv(&d.denied, policy_default_denied);
	strvec_pushv(&d.denied, policy_extra_denied);
	strvec_pushv(&d.network, policy_default_network);
	*p = d;
}

int policy_init_from_config(struct policy *p, const struct config *cfg)
{
	struct policy d = POLICY_INIT;
	enum approval_mode mode = APPROVAL_ASK;
	size_t i;

	if (cfg->permissions.mode && approval_mode_parse(&mode, cfg->permissions.mode) < 0)
		return err_prefix(FX_EINVAL, "permissions.mode");
	for (i = 0; i < cfg->terminal.allowed.nr; i++)
		strvec_push(&d.allowed, cfg->terminal.allowed.v[i]);
	if (cfg->terminal.denied.nr) {
		for (i = 0; i < cfg->terminal.denied.nr; i++)
			strvec_push(&d.denied, cfg->terminal.denied.v[i]);
	} else {
		strvec_pushv(&d.denied, policy_default_denied);
		strvec_pushv(&d.denied, policy_extra_denied);
	}
	/* what an untrusted project file adds: never a replacement */
	for (i = 0; i < cfg->terminal.denied_add.nr; i++)
		if (strvec_find(&d.denied, cfg->terminal.denied_add.v[i]) < 0)
			strvec_push(&d.denied, cfg->terminal.denied_add.v[i]);
	strvec_pushv(&d.network, policy_default_network);
	d.mode = mode;
	d.network_allowed = mode == APPROVAL_AUTO;
	*p = d;
	return 0;
}

void policy_release(struct policy *p)
{
	strvec_clear(&p->allowed);
	strvec_clear(&p->denied);
	strvec_clear(&p->network);
	p->network_allowed = 0;
	p->mode = APPROVAL_ASK;
}

const char *policy_decision_name(enum policy_decision d)
{
	switch (d) {
	case POLICY_ALLOW:
		return "allow";
	case POLICY_DENY:
		return "deny";
	case POLICY_APPROVAL:
		return "approval";
	}
	BUG("policy decision %d", (int)d);
}

const char *approval_mode_name(enum approval_mode m)
{
	switch (m) {
	case APPROVAL_SAFE:
		return "safe";
	case APPROVAL_ASK:
		return "ask";
	case APPROVAL_AUTO:
		return "auto";
	}
	BUG("approval mode %d", (int)m);
}

int approval_mode_parse(enum approval_mode *out, const char *s)
{
	if (!strcmp(s, "safe"))
		*out = APPROVAL_SAFE;
	else if (!strcmp(s, "ask"))
		*out = APPROVAL_ASK;
	else if (!strcmp(s, "auto"))
		*out = APPROVAL_AUTO;
	else
		return err_set(FX_EINVAL, "unknown approval mode '%s' (expected safe, ask or auto)", s);
	return 0;
}
