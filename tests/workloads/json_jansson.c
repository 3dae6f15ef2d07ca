// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* jansson: json_loads + json_dumps, CALLS times. */
#include <jansson.h>
#include "jsonwork.h"

static void round_trip(const char *text)
{
	json_error_t err;
	json_t *o = json_loads(text, 0, &err);

	free(json_dumps(o, 0));
	json_decref(o);
}

int main(int argc, char **argv)
{
	return jsonwork__main(argc, argv, round_trip);
}
