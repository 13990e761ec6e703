"""course_lib: the models that the lessons of Training Performance Engineering call.

One module per concept (see DESIGN.md): graph, pipeline, trace, clocks, overlap, flops, hardware,
memory, ... Every public function states its formula or definition and the lesson that introduces it.
"""

__version__ = "0.1.0"
