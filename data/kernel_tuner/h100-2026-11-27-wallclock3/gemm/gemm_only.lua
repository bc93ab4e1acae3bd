return (require "gemm")[1]
