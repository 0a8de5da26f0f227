#ifndef FX_DOCTOR_H
#define FX_DOCTOR_H

/*
 * The sections of `forgex doctor` that belong to layers (sandbox,
 * providers). Each is a function in src/cli/doctor_<layer>.c reporting
 * through doctor_section() and doctor_item() (cli.h); doctor_sections()
 * calls them in order. `cfg` is NULL when the configuration is broken.
 */

#include "cli/cli.h"

void doctor_sections(struct doctor *d, const struct config *cfg);

/** "Sandbox": kernel features, what the native backend enforces here, docker (doctor_sandbox.c). */
void doctor_sandbox(struct doctor *d, const struct config *cfg);

/** "Providers": reachability, model and key of each [providers.NAME] (doctor_llm.c). */
void doctor_llm(struct doctor *d, const struct config *cfg);

/** "MCP servers": the handshake of each enabled [mcp_servers.NAME] (doctor_mcp.c). */
void doctor_mcp(struct doctor *d, const struct config *cfg);

#endif
