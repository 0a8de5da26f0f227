#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("forgex %s\n", FX_VERSION);
		return 0;
	}
	return 2;
}
