"""Uploads a local table folder to s3://BUCKET/PREFIX on a local S3 server (directly, no delay),
creating the bucket. Usage: s3_copy.py ENDPOINT DIR BUCKET PREFIX"""
import os
import sys

import boto3

endpoint, root, bucket, prefix = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                  aws_secret_access_key="testing", region_name="us-east-1")
try:
    s3.create_bucket(Bucket=bucket)
except s3.exceptions.BucketAlreadyOwnedByYou:
    pass
for d, _, files in os.walk(root):
    for f in files:
        p = os.path.join(d, f)
        s3.upload_file(p, bucket, prefix + "/" + os.path.relpath(p, root))
