#ifndef FX_CLI_H
#define FX_CLI_H
#endif
