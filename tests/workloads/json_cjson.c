// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cJSON: cJSON_Parse + cJSON_PrintUnformatted, CALLS times. */
#include <cjson/cJSON.h>
#include "jsonwork.h"

static void round_trip(const char *text)
{
	cJSON *o = cJSON_Parse(text);

	free(cJSON_PrintUnformatted(o));
	cJSON_Delete(o);
}

int main(int argc, char **argv)
{
	return jsonwork__main(argc, argv, round_trip);
}
