terraform {
  # terraform_data needs 1.4 and plantimestamp() 1.5. No provider: the experiment is
  # driven by portal.py through local-exec, so init downloads nothing.
  required_version = ">= 1.5"
}
