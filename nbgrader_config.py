"""nbgrader configuration for Training Performance Engineering.

The course code (course_lib.machinery.build, course_lib.machinery.grading) loads this file and then sets the course
root and the gradebook URL explicitly, so nothing depends on the current directory.
"""

import os

c = get_config()  # noqa: F821  (provided by traitlets when nbgrader loads this file)

c.CourseDirectory.course_id = "training-performance-engineering"
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
# nbgrader copies every file of source/<lesson>/ to release/; keep editor and cache debris out.
c.CourseDirectory.ignore = [
    ".ipynb_checkpoints",
    "*.pyc",
    "__pycache__",
    "feedback",
    "*.py",
    "*.db",
]

# What a student sees in place of a removed solution.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# A grade cell that a student deleted is put back and graded, not left pending manual grading.
c.OverwriteCells.add_missing_cells = True

# Executing a submission: each cell may take this long (seconds) before the kernel is stopped.
c.ExecutePreprocessor.timeout = 120
c.ExecutePreprocessor.interrupt_on_timeout = True

# Long outputs are cut when a submission is autograded.
c.LimitOutput.max_lines = 200
c.LimitOutput.max_traceback = 50
