"""Built-in studies (several runs compared)."""
