// GPipe: every rank runs all its forwards, then all its backwards, both in microbatch order.
#include "ppstream/schedule/schedule.h"
#include "schedule/args.h"

namespace ppstream {

ComputeOrder schedule_gpipe(int32_t pp, int32_t microbatches) {
  schedule_detail::require_at_least("schedule_gpipe", "pp", pp, 1);
  schedule_detail::require_at_least("schedule_gpipe", "microbatches", microbatches, 1);
  ComputeOrder order(static_cast<size_t>(pp));
  for (int32_t r = 0; r < pp; ++r) {
    auto& actions = order[static_cast<size_t>(r)];
    for (bool backward : {false, true})
      for (int32_t mb = 0; mb < microbatches; ++mb)
        actions.push_back(ComputeAction{backward, Microbatch{mb}, Stage{r}});
  }
  return order;
}

}  // namespace ppstream
