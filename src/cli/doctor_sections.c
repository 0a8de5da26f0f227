#include "cli/doctor.h"

void doctor_sections(struct doctor *d, const struct config *cfg)
{
	doctor_sandbox(d, cfg);
	doctor_llm(d, cfg);
	doctor_mcp(d, cfg);
}
