// The loss-plot script, compiled into the binary: scripts/plot_metrics.py verbatim, embedded
// at build time by cmake/embed_text.cmake (the generated definition lives in the build tree).
// The sweep runs it as `python3 -c SCRIPT ARGS`, so a copied or installed binary needs no source
// tree to draw OUT/loss.png. scripts/plot_metrics.py stays the single copy to edit.
#pragma once

#include <string_view>

namespace gossamer::sweep {

// The full text of scripts/plot_metrics.py as it was when the binary was built.
std::string_view plot_metrics_script();

}  // namespace gossamer::sweep
