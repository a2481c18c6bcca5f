#include "results/uuid.h"

#include <uuid/uuid.h>

namespace cedar {

std::string new_uuid() {
  uuid_t id;
  uuid_generate_random(id);
  char text[37];
  uuid_unparse_lower(id, text);
  return text;
}

}  // namespace cedar
