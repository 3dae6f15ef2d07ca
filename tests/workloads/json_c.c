// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* json-c: json_tokener_parse + json_object_to_json_string, CALLS times. */
#include <json-c/json.h>
#include <string.h>
#include "jsonwork.h"

static void round_trip(const char *text)
{
	struct json_object *o = json_tokener_parse(text);

	free(strdup(json_object_to_json_string(o)));
	json_object_put(o);
}

int main(int argc, char **argv)
{
	return jsonwork__main(argc, argv, round_trip);
}
