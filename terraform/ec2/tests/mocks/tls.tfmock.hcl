# Every host gets the same made-up key, of the shape the cloud-init module checks.
mock_resource "tls_private_key" {
  defaults = {
    public_key_openssh  = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHostKeyOfTheTest\n"
    private_key_openssh = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n-----END OPENSSH PRIVATE KEY-----\n"
  }
}
