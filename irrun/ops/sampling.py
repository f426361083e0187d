"""(ops of this family are being added)"""
