#include "cli/doctor.h"

void doctor_sections(struct doctor *d, const struct config *cfg)
{
	(void)d;
	(void)cfg;
}
