"""Local infrastructure under a study: joining Ray, resource checks, disk space, storage paths,
console quieting. Imports nothing else of ``search``."""
