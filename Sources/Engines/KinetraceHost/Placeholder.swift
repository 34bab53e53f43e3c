// Placeholder: replaced by this module's first real file.
